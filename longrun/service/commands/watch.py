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
from longrun.models.context import CompactionReport
from longrun.models.run import PendingApproval, RunStatusView
from longrun.service import client as api
from longrun.service import render
from longrun.service.commands.common import context_limits, dump
from longrun.store import AuditRecord, Store
from longrun.tools.autorun import runs_code_warnings


def describe_compaction(r: CompactionReport, error: str | None = None) -> str:
    """One line for a compaction's outcome (`error`: why a failed one failed)."""
    if r.outcome == "failed":
        return (f"compaction ({r.trigger}, failed): {error or 'the compaction activity failed'}; nothing was "
                f"compacted, the run goes on with its previous projection (base state v{r.base_state_version})")
    if r.outcome == "noop":
        return (f"compaction ({r.trigger}, noop): nothing worth clearing or summarizing at "
                f"{render.tokens(r.tokens_before_calibrated)} tokens (base state v{r.base_state_version})")
    stages = ", ".join(s for s in r.stages_run if r.freed_per_stage.get(s, 0) or s in ("summarize", "enforce")) or "none"
    parts = [
        f"compaction ({r.trigger}, {r.outcome}): {render.tokens(r.tokens_before_calibrated)} -> "
        f"{render.tokens(r.tokens_after_calibrated)} tokens; stages {stages}",
    ]
    if r.cleared_results:
        parts.append(f"{r.cleared_results} result(s) cleared to references")
    if r.messages_summarized:
        parts.append(f"{r.messages_summarized} message(s) summarized into {render.tokens(r.summary_tokens)} tokens "
                     f"({r.summary_source})")
    if r.summary_rejected_reason:
        parts.append(f"summary rejected: {r.summary_rejected_reason}")
    if r.dropped_messages:
        parts.append(f"{r.dropped_messages} message(s) dropped")
    parts.append(f"tail kept {r.tail_messages} message(s)/{render.tokens(r.tail_tokens)} tokens, "
                 f"base state v{r.base_state_version}")
    return "; ".join(parts)


def describe_compaction_started(e: CompactionStarted) -> str:
    budget = f", budget {render.tokens(e.budget)}" if e.budget is not None else ""
    attempt = f", attempt {e.attempt}" if e.attempt > 1 else ""
    return (f"compaction started ({e.trigger}, after turn {e.turn}): {render.tokens(e.tokens_before_calibrated)} "
            f"tokens, base state v{e.base_state_version}{budget}{attempt}")


def describe_notification(e: NotificationAttempt | NotificationDelivered | NotificationFailed) -> str:
    """One line for a webhook delivery's attempt or outcome (a webhook shows as name and host)."""
    if isinstance(e, NotificationAttempt):
        got = f"HTTP {e.status}" if e.status is not None else (e.error or "no answer")
        then = {"delivered": "delivered", "transient": "will retry", "permanent": "refused, not retried"}[e.outcome]
        after = f" (Retry-After {e.retry_after:g} s)" if e.retry_after is not None else ""
        return f"{e.event} to webhook {e.webhook} ({e.target or 'not configured'}) attempt {e.attempt}: {got}{after}; {then}"
    if isinstance(e, NotificationDelivered):
        return f"{e.event} delivered to webhook {e.webhook} ({e.target}), HTTP {e.status}, attempt {e.attempts}"
    tries = f" after {e.attempts} attempt(s)" if e.attempts else ""
    return f"{e.event} NOT delivered to webhook {e.webhook}{tries}: {e.reason}; the run is unaffected"


def answer_commands(run_id: str, pending: PendingApproval, approvers: list[str]) -> tuple[str, str]:
    who = approvers[0] if approvers else "NAME"
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
        status, self.source = await api.run_status(self.client, self.store, self.run_id)
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
            pending = api.pending_from_audit([rec], ttl)
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
                # the run row is marked finished just before its run_finished event is appended
                for _ in range(20):
                    if self.finished_seen:
                        break
                    await asyncio.sleep(0.1)
                    status = await self.poll()
                return status
            if until(status):
                return status
            await asyncio.sleep(interval)
