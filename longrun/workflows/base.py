"""What every part of `AgentRunWorkflow` shares: its small in-memory state, and the one way it
calls an activity (by its declaration in `longrun.activities.contract`, with explicit options).

The workflow is split by concern into mixins over this base (`approvals`, `controls`,
`tool_calls`, and the turn loop in `agent_run`); Temporal collects the handlers of all of them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from longrun.activities.contract import Activities
    from longrun.models.audit import AuditEvent
    from longrun.models.io import (
        ApprovalDecision,
        AskHumanInput,
        LoadRunResult,
        RecordEventInput,
        RunCursor,
        StateBrief,
        ToolCallRef,
        ToolResultRef,
    )
    from longrun.models.run import PendingApproval, RunStatus
    from longrun.workflows import options as opt

In = TypeVar("In")
R = TypeVar("R")

REQUEST_AUDITED_FIRST_PATCH = "request-audited-first"
"""A request the run waits on (an approval, a budget raise) shows in `status` and can be answered
only once it is in the audit: before, a client that saw it while its record was being written
could not open it (`approval()`: no such request). Histories recorded before this showed it at once."""


SHAPE_PATCH = "shape-2026-12"
"""One patch marker for every patch of `SHAPE_COVERS`, evaluated first thing in a run of the
workflow (`AgentRunLoop.__init__`). Why: each patch a run reaches writes a marker and an upsert of
the `TemporalChangeVersion` search attribute (a visibility write on the server), so a generation
of a new run wrote about eight of each before this, where one says the same. A history without
this marker (recorded before it, or a run in flight when the worker was upgraded: its first
workflow task replays without it, and the SDK keeps that answer for the whole run) asks each
patch on its own, as before."""

SHAPE_COVERS = frozenset((
    "request-audited-first", "final-report-turn", "fused-turn", "git-change-sets", "ledger-token-cap", "start-run",
    "key-revocation-ends-scopes", "stage-boundary-from-results", "compaction-failure-goes-on", "mcp-tools", "run-tools",
    "budget-wait", "grant-failure-leaves-request-open", "signed-decisions", "approval-wait-telemetry", "notifications",
))
"""The patches that `SHAPE_PATCH` stands for: every one that existed when it was made. A later
patch is asked on its own (a run with the shape marker does not have it)."""


class Stop(Exception):
    """Ends the loop with a final status (raised inside the workflow only)."""

    def __init__(self, status: RunStatus, reason: str) -> None:
        assert status.finished
        super().__init__(reason)
        self.status = status
        self.reason = reason


class RunBase:
    """The workflow's fields (set by `AgentRunWorkflow.__init__`) and shared helpers."""

    run_id: str
    cursor: RunCursor
    status: RunStatus
    state: StateBrief
    spec: LoadRunResult | None
    pending: PendingApproval | None
    decision: ApprovalDecision | None
    deciding: bool
    voided: str
    request_unaudited: bool
    """A request is set as pending but its audit record is still being written: queries do not
    show it and the decision updates refuse it until then."""
    cancel_requested: bool
    compact_requested: bool
    reason: str
    children: list[str]
    shaped: bool = False
    """This run of the workflow has `SHAPE_PATCH` (set in `AgentRunLoop.__init__`)."""

    def _patched(self, patch_id: str) -> bool:
        """`workflow.patched(patch_id)`, answered by `SHAPE_PATCH` for the patches it covers."""
        if self.shaped and patch_id in SHAPE_COVERS:
            return True
        return workflow.patched(patch_id)

    async def _act(
        self, declaration: Callable[[Activities, In], R], arg: In, options: opt.ActivityOptions = opt.DEFAULT
    ) -> R:
        """Run the activity `declaration` names, with `options` (timeouts, retry policy)."""
        return await workflow.execute_activity_method(declaration, arg, **options)

    async def _record(self, event: AuditEvent) -> None:
        await self._act(Activities.record_event, self._event_input(event))

    async def _record_request(self, event: AuditEvent) -> None:
        """Audit the request just set as `self.pending`, hidden from queries and decisions until
        the record is written (histories from before `REQUEST_AUDITED_FIRST_PATCH`: shown at once)."""
        if not self._patched(REQUEST_AUDITED_FIRST_PATCH):
            await self._record(event)
            return
        self.request_unaudited = True
        try:
            await self._record(event)
        finally:
            self.request_unaudited = False

    def _event_input(self, event: AuditEvent) -> RecordEventInput:
        return RecordEventInput(run_id=self.run_id, event=event)

    def _set_state(self, brief: StateBrief) -> None:
        self.state = brief
        self.cursor.head_version = brief.version

    async def _ask_human(self, reason: str) -> None:
        self.reason = reason
        self._set_state(await self._act(Activities.ask_human, AskHumanInput(run_id=self.run_id, reason=reason)))

    @staticmethod
    def _error(call: ToolCallRef, text: str) -> ToolResultRef:
        return ToolResultRef(call_id=call.call_id, tool=call.name, is_error=True, error_text=text[:4000])
