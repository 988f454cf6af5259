"""A run's status, from the live workflow when it answers and from PostgreSQL when not.

A finished run's workflow is deleted after the namespace's retention period; what `status` shows
must then come from Postgres alone. The functions below rebuild the same view from the run row,
the head state and the audit log, so the CLI, the console and `longrun.Client` show one thing.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from longrun.client.calls import rpc_error, run_handle
from longrun.models.audit import (
    ApprovalExpired,
    ApprovalGranted,
    ApprovalRejected,
    ApprovalRequested,
    CompactionDone,
    ModelCalled,
    RunControl,
    RunFinished,
    ToolRan,
)
from longrun.models.io import StatusQueryResult
from longrun.models.provider import Usage
from longrun.models.run import PendingApproval, RunStatus, RunStatusView
from longrun.models.state import NextAction, TaskState
from longrun.store import AuditRecord, Store
from longrun.store.records import RunRecord
from longrun.workflows.interface import AgentRunInterface

NO_WORKER = (RPCStatusCode.FAILED_PRECONDITION, RPCStatusCode.DEADLINE_EXCEEDED, RPCStatusCode.CANCELLED)
"""How a query to a running workflow fails when no worker polls its task queue: the server says
FAILED_PRECONDITION ("no poller seen"), or the query's own deadline passes first."""



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


def paused_from_audit(state: TaskState, records: list[AuditRecord]) -> bool:
    """Whether a run not finished is paused, as the workflow holds it (the `runs` row says
    `running` until the run ends): its last pause/resume control was a pause, or its head state
    waits for a human (only `say` ends that; `resume` does not). `longrun.store.overview` counts
    the same in SQL for `/metrics`."""
    if state.next_action is NextAction.ask_human:
        return True
    controls = [r.event.action for r in records if isinstance(r.event, RunControl) and r.event.action in ("pause", "resume")]
    return bool(controls) and controls[-1] == "pause"


def status_from_records(run: RunRecord, state: TaskState, records: list[AuditRecord]) -> RunStatusView:
    """`status_from_store` over rows already read (the console keeps parsed audit logs)."""
    usage, calls, tools, turn = usage_from_audit(records)
    # as the workflow's status query: a compaction that found nothing to do is not the last one
    compactions = [r.event.report for r in records if isinstance(r.event, CompactionDone) and r.event.report.outcome != "noop"]
    status = run.status
    pending = None if RunStatus(status).finished else pending_from_audit(records, run.spec.approval_ttl_seconds)
    if status == RunStatus.running.value and paused_from_audit(state, records):
        status = RunStatus.paused.value  # a pause outranks a pending approval, as in the workflow
    elif pending is not None and status == RunStatus.running.value:
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
        desc = await run_handle(client, run_id).describe(rpc_timeout=timedelta(seconds=5))
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            return None, "gone"
        raise rpc_error(exc, run_id) from exc
    if desc.status is not None and desc.status != WorkflowExecutionStatus.RUNNING:
        return None, "closed"
    try:
        return await run_handle(client, run_id).query(
            AgentRunInterface.status_query, rpc_timeout=timedelta(seconds=QUERY_TIMEOUT_SECONDS)
        ), ""
    except RPCError as exc:
        if exc.status in NO_WORKER:
            return None, (f"no worker polls task queue {desc.task_queue!r}: start one with `longrun worker`"
                          + (f" (LONGRUN_TASK_QUEUE={desc.task_queue})" if desc.task_queue != "longrun" else ""))
        if exc.status == RPCStatusCode.NOT_FOUND:
            return None, "gone"
        raise rpc_error(exc, run_id) from exc


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


__all__ = ["NO_WORKER", "QUERY_TIMEOUT_SECONDS", "paused_from_audit", "pending_from_audit", "probe_workflow", "run_status",
           "status_from_records", "status_from_store", "usage_from_audit"]
