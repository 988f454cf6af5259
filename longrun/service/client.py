"""The client API the CLI (and tests) use: start runs, ask their status, approve, steer.

Every function names what went wrong and what to do: an unknown run id, a stack that does not
answer ("run `longrun dev up`"), a workspace that does not exist.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from temporalio.client import Client, WorkflowHandle, WorkflowUpdateFailedError
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.service import RPCError

from longrun.context.tokens import estimate_message
from longrun.errors import ApprovalError, ConfigError, RunNotFoundError, StackNotRunning
from longrun.models.blocks import Message
from longrun.models.io import AgentRunInput, ApproveInput, RejectInput, SayInput, StatusQueryResult
from longrun.models.spec import RunSpec
from longrun.service.settings import Settings
from longrun.store import Store, make_engine
from longrun.workflows.agent_run import WORKFLOW_NAME, AgentRunWorkflow

HINT_UP = "start the embedded stack with `longrun dev up`, or set LONGRUN_DATABASE_URL and TEMPORAL_ADDRESS"


async def connect(settings: Settings) -> Client:
    try:
        return await Client.connect(
            settings.temporal_address, namespace=settings.namespace, data_converter=pydantic_data_converter
        )
    except Exception as exc:  # noqa: BLE001 - any connection failure means the same thing to a user
        raise StackNotRunning(f"Temporal does not answer at {settings.temporal_address} ({exc}); {HINT_UP}") from exc


def open_store(settings: Settings) -> Store:
    if not settings.database_url:
        raise StackNotRunning(f"no database configured; {HINT_UP}")
    try:
        store = Store(make_engine(settings.database_url))
        store.ping()
    except Exception as exc:  # noqa: BLE001
        if isinstance(exc, StackNotRunning):
            raise
        raise StackNotRunning(f"PostgreSQL does not answer at {settings.database_url} ({exc}); {HINT_UP}") from exc
    return store


def new_run_id() -> str:
    return "run-" + uuid.uuid4().hex[:12]


def opening_message(spec: RunSpec) -> Message:
    """The first user message of every run: the objective and the constraints, verbatim."""
    lines = [f"Objective: {spec.objective}"]
    if spec.constraints:
        lines.append("Constraints (verbatim, binding):")
        lines += [f"- {c}" for c in spec.constraints]
    if spec.allowed_commands:
        lines.append("Allowed commands (run_command argv, exact):")
        lines += [f"- {' '.join(argv)}" for argv in spec.allowed_commands]
    lines.append(f"Workspace: {spec.workspace}")
    return Message.user_text("\n".join(lines))


async def start_run(
    client: Client, store: Store, spec: RunSpec, *, task_queue: str, run_id: str | None = None
) -> str:
    """Record the run in Postgres, then start its workflow (id = run id)."""
    workspace = Path(spec.workspace)
    if not workspace.is_dir():
        raise ConfigError(f"workspace {spec.workspace} does not exist or is not a directory; pass an existing folder")
    run_id = run_id or new_run_id()
    store.create_run(run_id, spec)
    message = opening_message(spec)
    store.append_transcript(run_id, message, token_estimate=estimate_message(message), turn=0)
    await client.start_workflow(
        AgentRunWorkflow.run, AgentRunInput(run_id=run_id), id=run_id, task_queue=task_queue
    )
    return run_id


def handle(client: Client, run_id: str) -> WorkflowHandle:
    return client.get_workflow_handle(run_id)


async def query_status(client: Client, run_id: str) -> StatusQueryResult | None:
    """The live status from the workflow, or None when Temporal no longer has it."""
    try:
        return await handle(client, run_id).query(AgentRunWorkflow.status_query)
    except RPCError as exc:
        if "not found" in str(exc).lower():
            return None
        raise


async def _update(client: Client, run_id: str, name: str, arg=None) -> str:
    try:
        h = handle(client, run_id)
        if arg is None:
            return await h.execute_update(name, result_type=str)
        return await h.execute_update(name, arg, result_type=str)
    except WorkflowUpdateFailedError as exc:
        cause = exc.cause
        raise ApprovalError(getattr(cause, "message", None) or str(cause or exc)) from exc
    except RPCError as exc:
        if "not found" in str(exc).lower():
            raise RunNotFoundError(run_id) from exc
        if "workflow execution already completed" in str(exc).lower() or "already completed" in str(exc).lower():
            raise ApprovalError(f"run {run_id} has already finished; nothing to change") from exc
        raise


async def approve(client: Client, run_id: str, approval_id: str, approver: str, ttl_seconds: int | None = None) -> str:
    return await _update(client, run_id, "approve", ApproveInput(approval_id=approval_id, approver=approver, ttl_seconds=ttl_seconds))


async def reject(client: Client, run_id: str, approval_id: str, approver: str, reason: str) -> str:
    return await _update(client, run_id, "reject", RejectInput(approval_id=approval_id, approver=approver, reason=reason))


async def say(client: Client, run_id: str, text: str, constraint: bool = False) -> str:
    return await _update(client, run_id, "say", SayInput(text=text, constraint=constraint))


async def control(client: Client, run_id: str, action: str) -> str:
    if action not in ("pause", "resume", "cancel", "compact_now"):
        raise ValueError(action)
    return await _update(client, run_id, action)


__all__ = [
    "WORKFLOW_NAME", "approve", "connect", "control", "new_run_id", "open_store", "opening_message",
    "query_status", "reject", "say", "start_run",
]
