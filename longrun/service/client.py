"""The client API the CLI (and tests) use: start runs, ask their status, approve, steer.

Every function names what went wrong and what to do: an unknown run id, a stack that does not
answer ("run `longrun dev up`"), a workspace that does not exist.
"""

from __future__ import annotations

import contextlib
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle, WorkflowUpdateFailedError
from temporalio.common import WorkflowIDReusePolicy
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.service import RPCError, RPCStatusCode

from longrun.context.opening import opening_message
from longrun.context.tokens import estimate_message
from longrun.errors import ApprovalError, ConfigError, RunNotFoundError, StackNotRunning
from longrun.models.audit import (
    ApprovalExpired,
    ApprovalGranted,
    ApprovalRefused,
    ApprovalRejected,
    ApprovalRequested,
    CompactionDone,
    ModelCalled,
    RunFinished,
    ToolRan,
)
from longrun.models.io import AgentRunInput, SayInput, StatusQueryResult
from longrun.models.provider import Usage
from longrun.models.run import PendingApproval, RunStatus, RunStatusView
from longrun.models.spec import RunSpec
from longrun.models.state import TaskState
from longrun.service.settings import Settings
from longrun.store import AuditRecord, Store, make_engine
from longrun.store.records import RunRecord
from longrun.workflows.agent_run import WORKFLOW_NAME, AgentRunWorkflow

HINT_UP = "run `longrun dev up` to start the embedded stack, or set LONGRUN_DATABASE_URL and TEMPORAL_ADDRESS"


async def connect(settings: Settings) -> Client:
    try:
        return await Client.connect(
            settings.temporal_address, namespace=settings.namespace, data_converter=pydantic_data_converter
        )
    except Exception as exc:
        raise StackNotRunning(f"Temporal does not answer at {settings.temporal_address} ({exc}); {HINT_UP}") from exc


def open_store(settings: Settings) -> Store:
    if not settings.database_url:
        raise StackNotRunning(f"no database configured; {HINT_UP}")
    try:
        store = Store(make_engine(settings.database_url))
        store.ping()
    except Exception as exc:
        if isinstance(exc, StackNotRunning):
            raise
        raise StackNotRunning(f"PostgreSQL does not answer at {settings.database_url} ({exc}); {HINT_UP}") from exc
    return store


def new_run_id() -> str:
    return "run-" + uuid.uuid4().hex[:12]


async def start_run(
    client: Client, store: Store, spec: RunSpec, *, task_queue: str, run_id: str | None = None,
    actor: str = "operator",
) -> str:
    """Record the run in Postgres (its `run_started` event by `actor`), then start its workflow
    (id = run id; a second start of the same id is refused by Temporal, even after the first
    ended). Every approver must be a registered principal with the approver role and an active
    key (`longrun approvers add`)."""
    workspace = Path(spec.workspace)
    if not workspace.is_dir():
        raise ConfigError(f"workspace {spec.workspace} does not exist or is not a directory; pass an existing folder")
    problems = store.approver_problems(spec.approvers)
    if problems:
        raise ConfigError("cannot start the run: " + "; ".join(problems))
    run_id = run_id or new_run_id()
    message = opening_message(spec)
    store.create_run(run_id, spec, actor=actor, opening=message, opening_token_estimate=estimate_message(message))
    await launch(client, run_id, task_queue)
    return run_id


async def launch(client: Client, run_id: str, task_queue: str) -> None:
    """Start the workflow of the recorded run `run_id`. Temporal refuses a second start of the
    same id, even after the first ended (`WorkflowAlreadyStartedError`), so no run runs twice.

    Raises:
        temporalio.exceptions.WorkflowAlreadyStartedError: it was started before."""
    await client.start_workflow(
        AgentRunWorkflow.run, AgentRunInput(run_id=run_id), id=run_id, task_queue=task_queue,
        id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
    )


def handle(client: Client, run_id: str) -> WorkflowHandle[Any, Any]:
    return client.get_workflow_handle(run_id)


async def query_status(client: Client, run_id: str) -> StatusQueryResult | None:
    """The live status from the workflow, or None when Temporal no longer has it."""
    try:
        return await handle(client, run_id).query(AgentRunWorkflow.status_query)
    except RPCError as exc:
        if "not found" in str(exc).lower():
            return None
        raise


async def _update(client: Client, run_id: str, name: str, arg: BaseModel | None = None) -> str:
    try:
        h = handle(client, run_id)
        if arg is None:
            return str(await h.execute_update(name, result_type=str))
        return str(await h.execute_update(name, arg, result_type=str))
    except WorkflowUpdateFailedError as exc:
        cause = exc.cause
        audited = getattr(cause, "type", None) == "RefusalAudited"  # workflows.approvals.REFUSAL_AUDITED
        raise ApprovalError(getattr(cause, "message", None) or str(cause or exc), audited=audited) from exc
    except RPCError as exc:
        if "not found" in str(exc).lower():
            raise RunNotFoundError(run_id) from exc
        if "workflow execution already completed" in str(exc).lower() or "already completed" in str(exc).lower():
            raise ApprovalError(f"run {run_id} has already finished; nothing to change") from exc
        raise


def record_refusal(store: Store | None, run_id: str, approval_id: str, approver: str, reason: str) -> None:
    """Write a refused approve/reject into the run's audit log (the workflow's validator writes
    nothing, and a finished run has no workflow to ask). Unknown runs have no log to write to."""
    if store is None:
        return
    with contextlib.suppress(RunNotFoundError):
        store.append_audit(
            run_id, ApprovalRefused(approval_id=approval_id or "(none)", approver=approver or "(none)", reason=reason),
            actor=f"human:{approver or 'unknown'}",
        )


async def approve(
    client: Client, run_id: str, approval_id: str, approver: Any, ttl_seconds: int | None = None, *,
    store: Store | None = None, **kwargs: Any,
) -> str:
    """Approve the pending action with a signed decision (`longrun.service.decide.approve`)."""
    from longrun.service import decide

    return await decide.approve(client, run_id, approval_id, approver, ttl_seconds, store=store, **kwargs)


async def reject(
    client: Client, run_id: str, approval_id: str, approver: Any, reason: str, *, store: Store | None = None,
    **kwargs: Any,
) -> str:
    """Reject the pending action with a signed decision (`longrun.service.decide.reject`)."""
    from longrun.service import decide

    return await decide.reject(client, run_id, approval_id, approver, reason, store=store, **kwargs)


async def say(client: Client, store: Store, run_id: str, text: str, constraint: bool = False) -> str:
    """Give the run an instruction (a constraint when `constraint`): the text is stored in
    Postgres first and the workflow is sent only its id, so the text never enters Temporal's
    history. A run that refuses it (finished) keeps the stored text unused."""
    status = store.get_run(run_id).status
    if RunStatus(status).finished:
        raise ApprovalError(f"run {run_id} has already finished; nothing to change")
    instruction_id = store.queue_instruction(run_id, text, as_constraint=constraint)
    return await _update(client, run_id, "say", SayInput(instruction_id=instruction_id, constraint=constraint))


async def control(client: Client, run_id: str, action: str) -> str:
    if action not in ("pause", "resume", "cancel", "compact_now"):
        raise ValueError(action)
    return await _update(client, run_id, action)


async def compact_now(client: Client, run_id: str) -> str:
    """Ask the run for an operator compaction once the current turn's results are committed.
    Refused (`ApprovalError`) when the run has finished."""
    return await control(client, run_id, "compact_now")


# ----------------------------------------------------------------------- status from Postgres
# A finished run's workflow is deleted after the namespace's retention period; what `status` shows
# must then come from Postgres alone. The functions below rebuild the same view from the run row,
# the head state and the audit log.


def usage_from_audit(records: list[AuditRecord]) -> tuple[Usage, int, int, int]:
    """(usage, model calls, tool calls, last turn) summed over a run's audit events."""
    usage, calls, tools, turn = Usage(), 0, 0, 0
    for r in records:
        if isinstance(r.event, ModelCalled):
            usage, calls, turn = usage + r.event.usage, calls + 1, max(turn, r.event.turn)
        elif isinstance(r.event, ToolRan):
            tools += 1
    return usage, calls, tools, turn


def pending_from_audit(records: list[AuditRecord], ttl_seconds: int) -> PendingApproval | None:
    """The last approval request no grant, rejection or expiry answered, as the audit tells it."""
    pending: PendingApproval | None = None
    for r in records:
        e = r.event
        if isinstance(e, ApprovalRequested):
            pending = PendingApproval(
                approval_id=e.approval_id, tool=e.tool, arguments=e.arguments, action_hash=e.action_hash,
                state_version=e.state_version, requested_at=r.created_at,
                expires_at=r.created_at + timedelta(seconds=ttl_seconds),
            )
        elif (isinstance(e, (ApprovalGranted, ApprovalRejected, ApprovalExpired)) and pending is not None \
                and e.approval_id == pending.approval_id) or isinstance(e, RunFinished):
            pending = None
    return pending


def status_from_store(store: Store, run_id: str) -> RunStatusView:
    """The run's status from Postgres alone (used when Temporal no longer has the workflow).

    Raises:
        RunNotFoundError: no run has this id.
    """
    return status_from_records(store.get_run(run_id), store.load_state(run_id), store.audit(run_id))


def status_from_records(run: RunRecord, state: TaskState, records: list[AuditRecord]) -> RunStatusView:
    """`status_from_store` over rows already read (the console keeps parsed audit logs)."""
    usage, calls, tools, turn = usage_from_audit(records)
    # as the workflow's status query: a compaction that found nothing to do is not the last one
    compactions = [r.event.report for r in records if isinstance(r.event, CompactionDone) and r.event.report.outcome != "noop"]
    status = run.status
    pending = None if RunStatus(status).finished else pending_from_audit(records, run.spec.approval_ttl_seconds)
    if pending is not None and status == RunStatus.running.value:
        status = RunStatus.waiting_approval.value
    return RunStatusView(
        run_id=run.run_id, status=RunStatus(status), state_version=state.state_version, step=state.current_step.value,
        next_action=state.next_action.value, turn=turn, model=run.model, pending_approval=pending, usage=usage,
        model_calls=calls, tool_calls=tools, last_compaction=compactions[-1] if compactions else None,
        reason=run.reason,
    )


QUERY_TIMEOUT_SECONDS = 3
"""A query is answered by a worker in milliseconds; a task queue nobody polls makes it wait."""


async def probe_workflow(client: Client, run_id: str) -> tuple[StatusQueryResult | None, str]:
    """The live status of a *running* workflow, or None and why not.

    A query needs a worker even on a closed workflow, so the execution is described first: a
    closed or deleted workflow answers None at once ("closed", "gone"); a running one whose task
    queue has no worker answers None with "no worker" (updates to it would wait for one).
    """
    try:
        desc = await handle(client, run_id).describe(rpc_timeout=timedelta(seconds=5))
    except RPCError as exc:
        if "not found" in str(exc).lower():
            return None, "gone"
        raise
    if desc.status is not None and desc.status != WorkflowExecutionStatus.RUNNING:
        return None, "closed"
    try:
        return await handle(client, run_id).query(
            AgentRunWorkflow.status_query, rpc_timeout=timedelta(seconds=QUERY_TIMEOUT_SECONDS)
        ), ""
    except RPCError as exc:
        text = str(exc).lower()
        if "no poller" in text or "worker may be down" in text or "timeout" in text \
                or exc.status in (RPCStatusCode.DEADLINE_EXCEEDED, RPCStatusCode.CANCELLED):
            return None, (f"no worker polls task queue {desc.task_queue!r}: start one with `longrun worker`"
                          + (f" (LONGRUN_TASK_QUEUE={desc.task_queue})" if desc.task_queue != "longrun" else ""))
        if "not found" in text:
            return None, "gone"
        raise


async def run_status(client: Client | None, store: Store, run_id: str) -> tuple[RunStatusView, str]:
    """The run's status and where it came from: `"temporal"` (the live workflow query) or
    `"postgres"` (the workflow is closed or gone, no worker answers, or Temporal does not answer:
    `client` is None); in the last cases the second item says why (`"postgres: no worker ..."`).

    Raises:
        RunNotFoundError: no run has this id (in Postgres, the record of every run).
    """
    run = store.get_run(run_id)
    live, why = await probe_workflow(client, run_id) if client is not None else (None, "Temporal does not answer")
    if live is None:
        return status_from_store(store, run_id), "postgres" + (f": {why}" if why not in ("gone", "closed") else "")
    return RunStatusView(
        run_id=run_id, status=RunStatus(live.status), state_version=live.state.version, step=live.state.step,
        next_action=live.state.next_action, turn=live.turn, model=run.model, pending_approval=live.pending_approval,
        usage=live.usage, model_calls=live.model_calls, tool_calls=live.tool_calls,
        last_compaction=live.last_compaction, reason=live.reason or run.reason, children=live.children,
    ), "temporal"


__all__ = [
    "WORKFLOW_NAME", "approve", "compact_now", "connect", "control", "launch", "new_run_id", "open_store", "opening_message",
    "pending_from_audit", "probe_workflow", "query_status", "reject", "run_status", "say", "start_run", "status_from_records", "status_from_store",
    "usage_from_audit",
]
