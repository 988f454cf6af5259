"""Live progress of a run, shared by `watch`, `start --wait` and the demo.

A `Watcher` polls the workflow's status query (Postgres when the workflow is gone) and the run's
audit log, and prints what changed: turn, step and next action, the context meter after every
model request, compactions as they happen, approvals with the exact command that answers them.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from temporalio.client import Client

from longrun import render
from longrun.cli.commands.common import dump
from longrun.client import status as client_status
from longrun.models.audit import (
    ApprovalExpired,
    ApprovalFailed,
    ApprovalGranted,
    ApprovalRefused,
    ApprovalRejected,
    ApprovalRequested,
    CompactionDone,
    CompactionStarted,
    ErrorRecorded,
    GateVerdict,
    InstructionDropped,
    ModelCalled,
    NotificationAttempt,
    NotificationDelivered,
    NotificationFailed,
    RunControl,
    RunFinished,
    ScopeEnded,
    ScopeGranted,
    ScopeUsed,
    Steered,
    ToolRan,
)
from longrun.models.run import PendingApproval, RunStatusView
from longrun.store import AuditRecord, Store
from longrun.tools.autorun import runs_code_warnings
from longrun.views_common import (
    context_limits,
    describe_compaction,
    describe_compaction_started,
    describe_notification,
)


def answer_commands(run_id: str, pending: PendingApproval, approvers: list[str]) -> tuple[str, str]:
    who = approvers[0] if approvers else "NAME"
    if pending.kind == "budget":
        return (f"longrun raise-budget {run_id} --by USD --as {who}",
                f'longrun raise-budget {run_id} --reject --as {who} --reason "..."')
    return (
        f"longrun approve {run_id} {pending.approval_id} --as {who}",
        f'longrun reject {run_id} {pending.approval_id} --as {who} --reason "..."',
    )


PREVIEW_LIMIT = 300
_CUT_VALUE = re.compile(r"\.\.\. \(\d+ chars\)\Z")
"""How the gate's preview ends a value it cut (`activities/tools.py` `_preview`)."""


def preview_was_cut(arguments: dict[str, Any], shown: str) -> bool:
    """Whether the arguments an approver sees are shorter than the ones the approval binds."""
    return shown.endswith("…") or any(isinstance(v, str) and _CUT_VALUE.search(v) for v in arguments.values())


def describe_pending(run_id: str, pending: PendingApproval, approvers: list[str]) -> list[str]:
    if pending.kind == "budget":
        yes, no = answer_commands(run_id, pending, approvers)
        a = pending.arguments
        return [f"budget reached: {pending.approval_id}  spent ${float(a.get('spent_usd', 0)):,.4f} of "
                f"${float(a.get('limit_usd', 0)):,.2f} (run family {a.get('root_run_id', run_id)}); the run waits",
                f"  approvers: {', '.join(approvers) or '(none: nobody can raise this budget)'}",
                f"  raise:     {yes}", f"  end it:    {no}"]
    args = json.dumps(pending.arguments, ensure_ascii=False)
    if len(args) > PREVIEW_LIMIT:
        args = args[:PREVIEW_LIMIT - 1] + "…"
    yes, no = answer_commands(run_id, pending, approvers)
    lines = [
        f"approval needed: {pending.approval_id}  tool {pending.tool}  (proposed at state v{pending.state_version}, "
        f"expires {render.until(pending.expires_at)})",
        f"  arguments: {args}",
    ]
    if preview_was_cut(pending.arguments, args):
        lines.append(f"  (preview cut at {PREVIEW_LIMIT} chars: `longrun show {run_id} {pending.approval_id}` prints all of it)")
    lines += [f"  RUNS CODE: {path} ({why}): read all of it before approving" for path, why in runs_code_warnings(pending.arguments)]
    return [
        *lines,
        f"  approvers: {', '.join(approvers) or '(none: nobody can approve this run)'}",
        f"  approve:   {yes}",
        f"  reject:    {no}",
    ]


@dataclass
class Watcher:
    """Prints a run's progress; `poll()` once, or `follow(until)` until a condition holds."""

    client: Client | None
    store: Store
    run_id: str
    emit: Callable[[str], None] = print
    as_json: bool = False
    last_seq: int = 0
    seen: tuple[str, str, str] | None = None
    limit: int = 0
    trigger: int = 0
    approvers: list[str] = field(default_factory=list)
    source: str = ""
    finished_seen: bool = False

    def __post_init__(self) -> None:
        run = self.store.get_run(self.run_id)
        self.limit, self.trigger = context_limits(run.spec)
        self.approvers = list(run.spec.approvers)

    def _out(self, kind: str, text: str, data: Any = None) -> None:
        if self.as_json:
            self.emit(json.dumps({"type": kind, "run_id": self.run_id, "text": text, "data": dump(data)},
                                 ensure_ascii=False, default=str))
        else:
            self.emit(text)

    async def poll(self) -> RunStatusView:
        status, self.source = await client_status.run_status(self.client, self.store, self.run_id)
        for rec in self.store.audit(self.run_id):
            if rec.seq > self.last_seq:
                self._event(rec)
                self.last_seq = rec.seq
                self.finished_seen = self.finished_seen or isinstance(rec.event, RunFinished)
        key = (status.status.value, status.step, status.next_action)
        if key != self.seen:
            self.seen = key
            self._out("status", f"status {status.status.value}  turn {status.turn}  step {status.step}  "
                      f"next action {status.next_action}  state v{status.state_version}", status)
        return status

    def _event(self, rec: AuditRecord) -> None:
        e = rec.event
        if isinstance(e, ModelCalled):
            meter = render.meter(e.calibrated_tokens, self.limit, self.trigger)
            self._out("model_called", f"turn {e.turn:>3}  model request  {meter}", e)
        elif isinstance(e, CompactionStarted):
            self._out("compaction_started", f"           {describe_compaction_started(e)}", e)
        elif isinstance(e, CompactionDone):
            self._out("compaction", f"           {describe_compaction(e.report, e.error)}", e)
        elif isinstance(e, ToolRan):
            flag = "  ERROR" if e.is_error else ""
            summary = f": {e.summary[:90]}" if e.summary else ""
            where = f"  [sandbox {e.sandbox}]" if e.sandbox else ""
            self._out("tool_ran", f"           tool {e.tool}{flag}{summary}{where}", e)
        elif isinstance(e, GateVerdict) and e.verdict == "deny":
            self._out("gate_verdict", f"           gate denied {e.tool} (rule {e.rule}): {e.reason}", e)
        elif isinstance(e, ApprovalRequested):
            status = self.store.get_run(self.run_id)
            ttl = status.spec.approval_ttl_seconds
            pending = client_status.pending_from_audit([rec], ttl)
            if pending is not None:
                for line in describe_pending(self.run_id, pending, self.approvers):
                    self._out("approval_requested", line, e if line.startswith("approval") else None)
        elif isinstance(e, ApprovalGranted):
            self._out("approval_granted", f"           approved {e.approval_id} by {e.approver}, valid until "
                      f"{render.when(e.expires_at)}", e)
        elif isinstance(e, ApprovalRejected):
            self._out("approval_rejected", f"           rejected {e.approval_id} by {e.approver}: {e.reason}", e)
        elif isinstance(e, ScopeGranted):
            self._out("scope_granted", f"           standing approval {e.scope_id} by {e.approver}: "
                      f"{', '.join(e.tools)} on {', '.join(e.paths)}, {e.max_uses} uses, until {render.when(e.expires_at)}", e)
        elif isinstance(e, ScopeUsed):
            self._out("scope_used", f"           {e.tool} {e.path} covered by {e.scope_id} ({e.uses_left} uses left)", e)
        elif isinstance(e, ScopeEnded):
            self._out("scope_ended", f"           standing approval {e.scope_id} ended: {e.reason}", e)
        elif isinstance(e, ApprovalRefused):
            self._out("approval_refused", f"           refused an answer to {e.approval_id} from {e.approver}: {e.reason}", e)
        elif isinstance(e, ApprovalFailed):
            self._out("approval_failed", f"           the approval of {e.approval_id} by {e.approver} was not recorded "
                      f"({e.reason}); it is still open: approve again", e)
        elif isinstance(e, ApprovalExpired):
            self._out("approval_expired", f"           approval {e.approval_id} expired unanswered; the run waits for "
                      f"a human: `longrun say {self.run_id} \"...\"`", e)
        elif isinstance(e, Steered):
            self._out("steered", f"           {'constraint' if e.as_constraint else 'instruction'} from a human: {e.text}", e)
        elif isinstance(e, InstructionDropped):
            what = "constraint" if e.as_constraint else "instruction"
            self._out("instruction_dropped", f"           {what} from a human never applied ({e.reason}): {e.text}", e)
        elif isinstance(e, RunControl):
            self._out("run_control", f"           {e.action} by {e.by}", e)
        elif isinstance(e, ErrorRecorded):
            self._out("error", f"           error in {e.where}: {e.message}", e)
        elif isinstance(e, (NotificationDelivered, NotificationFailed)) or (
            isinstance(e, NotificationAttempt) and e.outcome != "delivered"
        ):
            self._out(e.kind, f"           {describe_notification(e)}", e)
        elif isinstance(e, RunFinished):
            self._out("run_finished", f"run {e.status}: {e.reason}", e)

    async def follow(self, until: Callable[[RunStatusView], bool], interval: float = 0.5) -> RunStatusView:
        while True:
            status = await self.poll()
            if status.status.finished:
                # a worker before `end_run` marked the row finished just before appending run_finished
                for _ in range(20):
                    if self.finished_seen:
                        break
                    await asyncio.sleep(0.1)
                    status = await self.poll()
                return status
            if until(status):
                return status
            await asyncio.sleep(interval)
