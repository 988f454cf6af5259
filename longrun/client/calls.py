"""Calls into a run's workflow, by reference, and what their Temporal failures mean.

Every update and query names the handler on `AgentRunInterface` (`AgentRunInterface.approve`, not
the string "approve"): the workflow's handlers by name and type without its implementation, so
calling a run does not import the turn loop, the activities or the Temporal worker
(`longrun.workflows.interface`; tests/test_workflow_interface.py holds it to `AgentRunWorkflow`). Temporal's RPC failures are recognised by their status code (`RPCStatusCode`), never by
the text of their message, and become longrun's own errors (`longrun.errors`):

    NOT_FOUND on a workflow that exists (closed)  -> ApprovalError ("already finished")
    NOT_FOUND otherwise                           -> RunNotFoundError
    UNAVAILABLE, DEADLINE_EXCEEDED                -> StackNotRunning
    anything else                                 -> TemporalRefused

Tests: tests/test_client_errors.py.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any, Literal, TypeVar

from pydantic import BaseModel
from temporalio.client import Client, WorkflowHandle, WorkflowUpdateFailedError
from temporalio.service import RPCError, RPCStatusCode
from temporalio.workflow import UpdateMethodMultiParam

from longrun.errors import ApprovalError, LongrunError, RunNotFoundError, StackNotRunning, TemporalRefused
from longrun.models.audit import ApprovalRefused
from longrun.models.io import AgentRunResult, StatusQueryResult
from longrun.store import Store
from longrun.workflows.interface import REFUSAL_AUDITED, AgentRunInterface

Control = Literal["pause", "resume", "cancel", "compact_now"]
"""The argument-less operator updates."""

CONTROLS: dict[Control, UpdateMethodMultiParam[[Any], Any]] = {
    "pause": AgentRunInterface.pause,
    "resume": AgentRunInterface.resume,
    "cancel": AgentRunInterface.cancel,
    "compact_now": AgentRunInterface.compact_now,
}
"""Each control by the workflow handler it calls."""

A = TypeVar("A", bound=BaseModel)
RunHandle = WorkflowHandle[Any, AgentRunResult]
"""(Self type Any: the handlers are defined on the workflow's mixins, `ApprovalsMixin`, ...)"""


def run_handle(client: Client, run_id: str) -> RunHandle:
    """The handle of a run's workflow (its id is the run id)."""
    return client.get_workflow_handle_for(AgentRunInterface.run, run_id)


def rpc_error(exc: RPCError, run_id: str) -> LongrunError:
    """The longrun error for a Temporal RPC failure about `run_id`, chosen by status code."""
    if exc.status == RPCStatusCode.NOT_FOUND:
        return RunNotFoundError(run_id)
    if exc.status in (RPCStatusCode.UNAVAILABLE, RPCStatusCode.DEADLINE_EXCEEDED):
        return StackNotRunning(f"Temporal did not answer about run {run_id} ({exc.status.name}: {exc.message}); "
                               "check the server (`longrun dev status`) and try again")
    return TemporalRefused(f"Temporal refused the call about run {run_id} ({exc.status.name}: {exc.message})",
                           status=exc.status.name)


async def _not_found(client: Client, run_id: str, exc: RPCError) -> LongrunError:
    """NOT_FOUND from an update: the workflow is closed (it exists) or there is no such run."""
    try:
        await run_handle(client, run_id).describe(rpc_timeout=timedelta(seconds=5))
    except RPCError:
        return RunNotFoundError(run_id)
    return ApprovalError(f"run {run_id} has already finished; nothing to change")


async def _call(client: Client, run_id: str, send: Callable[[RunHandle], Awaitable[Any]]) -> str:
    try:
        return str(await send(run_handle(client, run_id)))
    except WorkflowUpdateFailedError as exc:
        cause = exc.cause
        audited = getattr(cause, "type", None) == REFUSAL_AUDITED
        raise ApprovalError(getattr(cause, "message", None) or str(cause or exc), audited=audited) from exc
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            raise await _not_found(client, run_id, exc) from exc
        raise rpc_error(exc, run_id) from exc


async def update(client: Client, run_id: str, handler: UpdateMethodMultiParam[[Any, A], Any], arg: A) -> str:
    """Run the workflow update `handler` (a method of `AgentRunInterface`) with `arg`; its answer.

    Raises:
        ApprovalError: the workflow refused it (`audited` says whether the worker recorded that),
            or the run has finished.
        RunNotFoundError: Temporal has no such workflow.
        StackNotRunning: Temporal does not answer.
    """
    return await _call(client, run_id, lambda h: h.execute_update(handler, arg))


async def control(client: Client, run_id: str, action: Control) -> str:
    """Run one of the argument-less controls (pause, resume, cancel, compact_now); errors as `update`."""
    handler = CONTROLS[action]
    return await _call(client, run_id, lambda h: h.execute_update(handler))


async def query_status(client: Client, run_id: str) -> StatusQueryResult | None:
    """The live status from the workflow, or None when Temporal no longer has it.

    Raises:
        StackNotRunning, TemporalRefused: see `rpc_error`.
    """
    try:
        return await run_handle(client, run_id).query(AgentRunInterface.status_query)
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            return None
        raise rpc_error(exc, run_id) from exc


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


__all__ = ["CONTROLS", "Control", "RunHandle", "control", "query_status",
           "record_refusal", "rpc_error", "run_handle", "update"]
