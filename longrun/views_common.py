"""How runs read as text, for every front end: one line per audit event, a run's context limits
and its request sizes over time. The CLI (`longrun audit`, `watch`, `demo`) and the console show
the same words because they call these; neither imports the other.
"""

from __future__ import annotations

import json
from typing import assert_never

from longrun import render
from longrun.models.audit import (
    ApprovalExpired,
    ApprovalFailed,
    ApprovalGranted,
    ApprovalRefused,
    ApprovalRejected,
    ApprovalRequested,
    BudgetDecided,
    BudgetRequested,
    BudgetWarning,
    ChangeCommitted,
    ChangeSetOpened,
    CompactionDone,
    CompactionStarted,
    EffectIntent,
    EffectSettled,
    ErrorRecorded,
    ForkedFrom,
    GateVerdict,
    InstructionDropped,
    McpToolsListed,
    ModelCalled,
    NotificationAttempt,
    NotificationDelivered,
    NotificationFailed,
    OperatorRequest,
    ProviderContextManaged,
    RunControl,
    RunFinished,
    RunForked,
    RunRetention,
    RunStarted,
    ScopeEnded,
    ScopeGranted,
    ScopeUsed,
    StateCommitted,
    Steered,
    ToolRan,
)
from longrun.models.context import CompactionReport
from longrun.models.spec import RunSpec
from longrun.render import (
    SCRIPTED_NOTE as SCRIPTED_NOTE,  # its home is render: the CLI's parser reads it without models
)
from longrun.store import AuditRecord


def clip(text: str, n: int = 140) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


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


def describe_provider_context(e: ProviderContextManaged) -> str:
    """What the provider did to one call's context (`context.mode` provider / hybrid)."""
    did = []
    if e.cleared_tool_uses:
        did.append(f"cleared {e.cleared_tool_uses} tool result(s), {e.cleared_input_tokens} tokens")
    if e.compacted:
        did.append("compacted" + ("" if e.compaction_readable else
                                  f" (opaque; longrun's summary beside it, {e.summary_tokens or 0} tokens)"))
    return f"turn {e.turn} ({e.mode} mode, {e.model}): " + ("; ".join(did) or "reported no change")


def describe_event(rec: AuditRecord) -> str:
    e = rec.event
    if isinstance(e, RunStarted):
        return f"model {e.model}; approvers {', '.join(e.approvers) or '(none)'}; objective {clip(e.objective, 80)!r}"
    if isinstance(e, StateCommitted):
        return f"state v{e.state_version} by {e.actor}: {e.reason}"
    if isinstance(e, ModelCalled):
        u = e.usage
        return (f"turn {e.turn}: input {u.total_input} (cache read {u.cache_read_input_tokens}), output "
                f"{u.output_tokens}; estimated {e.estimated_tokens}, calibrated {e.calibrated_tokens}; "
                f"stop {e.stop_reason}")
    if isinstance(e, GateVerdict):
        return f"{e.verdict.upper()} {e.tool} (rule {e.rule}) at state v{e.state_version}: {clip(e.reason, 90)}"
    if isinstance(e, ApprovalRequested):
        return f"{e.approval_id} for {e.tool} {clip(json.dumps(e.arguments, ensure_ascii=False), 80)}"
    if isinstance(e, ApprovalGranted):
        signed = f", signed by key {e.proof.key_id}" if e.proof is not None else ", unsigned"
        edited = f", arguments edited (edit {e.edit_id})" if e.edit_id is not None else ""
        return f"{e.approval_id} by {e.approver}, valid until {e.expires_at.isoformat()}{signed}{edited}"
    if isinstance(e, ApprovalRejected):
        return f"{e.approval_id} by {e.approver}: {e.reason}"
    if isinstance(e, ApprovalExpired):
        return f"{e.approval_id} expired unanswered"
    if isinstance(e, ApprovalRefused):
        return f"{e.approval_id} from {e.approver}: {e.reason}"
    if isinstance(e, ScopeGranted):
        return (f"{e.scope_id} by {e.approver}: {', '.join(e.tools)} on {', '.join(e.paths)}, at most {e.max_uses} "
                f"uses, until {e.expires_at.isoformat()} (signed by key {e.proof.key_id})")
    if isinstance(e, ScopeUsed):
        return f"{e.scope_id} covers {e.action_id} {e.tool} {e.path} ({e.uses_left} uses left)"
    if isinstance(e, ScopeEnded):
        return f"{e.scope_id} ended by {e.by}: {e.reason}"
    if isinstance(e, ApprovalFailed):
        return f"{e.approval_id} by {e.approver} not recorded (still open): {e.reason}"
    if isinstance(e, EffectIntent):
        return f"{e.action_id} {e.tool} attempt {e.attempt}"
    if isinstance(e, EffectSettled):
        return f"{e.action_id} {e.tool} -> {e.status} ({e.how}){': ' + clip(e.detail, 60) if e.detail else ''}"
    if isinstance(e, ToolRan):
        return f"{e.tool}{' ERROR' if e.is_error else ''}: {clip(e.summary, 100)}"
    if isinstance(e, CompactionStarted):
        return describe_compaction_started(e)
    if isinstance(e, CompactionDone):
        where = f"projection v{e.projection_version}: " if e.projection_version is not None else ""
        return where + describe_compaction(e.report, e.error)
    if isinstance(e, ProviderContextManaged):
        return describe_provider_context(e)
    if isinstance(e, Steered):
        return f"{'constraint' if e.as_constraint else 'instruction'}: {clip(e.text, 100)}"
    if isinstance(e, InstructionDropped):
        what = "constraint" if e.as_constraint else "instruction"
        return f"{what} {e.instruction_id} never applied: {clip(e.text, 80)} ({e.reason})"
    if isinstance(e, RunControl):
        return f"{e.action} by {e.by}"
    if isinstance(e, OperatorRequest):
        return f"{e.action} asked by {e.principal} in the console: {e.outcome}{': ' + e.reason if e.reason else ''}"
    if isinstance(e, ChangeSetOpened):
        return f"branch {e.branch} from {e.base[:12]} in the worktree {e.worktree}"
    if isinstance(e, ChangeCommitted):
        return f"{e.action_id} {e.tool} committed {e.commit[:12]} on {e.branch} ({e.how}): {clip(', '.join(e.paths), 80)}"
    if isinstance(e, McpToolsListed):
        skipped = f"; skipped: {clip('; '.join(e.skipped), 120)}" if e.skipped else ""
        return f"{len(e.tools)} MCP tool(s) listed (listing {e.listing_sha256[:12]}): {clip(', '.join(e.tools), 100)}{skipped}"
    if isinstance(e, ForkedFrom):
        on = f"; branch from {e.commit[:12]}" if e.commit else ""
        return (f"forked from {e.parent_run_id} at state v{e.parent_version} (transcript through entry "
                f"{e.parent_through_seq}) by {e.by}, model {e.model}{'; objective replaced' if e.objective_replaced else ''}"
                f"{on}")
    if isinstance(e, RunForked):
        on = f"; branch from {e.commit[:12]}" if e.commit else ""
        return f"fork {e.fork_run_id} made at state v{e.at_version} (transcript through entry {e.through_seq}) by {e.by}{on}"
    if isinstance(e, RunFinished):
        return f"{e.status}: {e.reason}"
    if isinstance(e, RunRetention):
        if e.action != "prune":
            return f"{e.action}ned by {e.by}"
        counts = ", ".join(f"{n} {table}" for table, n in sorted(e.pruned.items()) if n) or "nothing"
        return f"bodies pruned by {e.by}: {counts} ({e.bytes_freed:,} bytes freed; hashes and tombstones kept)"
    if isinstance(e, ErrorRecorded):
        return f"{e.where}: {e.message}"
    if isinstance(e, (NotificationAttempt, NotificationDelivered, NotificationFailed)):
        return describe_notification(e)
    if isinstance(e, BudgetRequested):
        return f"{e.request_id}: budget reached, ${e.spent_usd:,.4f} of ${e.limit_usd:,.2f}; waits for a signed raise"
    if isinstance(e, BudgetWarning):
        return f"80% of the budget spent: ${e.spent_usd:,.4f} of ${e.limit_usd:,.2f}"
    if isinstance(e, BudgetDecided):
        what = f"raised by ${e.by_usd:,.2f}" if e.decision == "raise" else "not raised"
        return f"{e.request_id}: {what} by {e.approver}{': ' + e.reason if e.reason else ''}"
    assert_never(e)


def context_limits(spec: RunSpec) -> tuple[int, int]:
    """(hard limit of one request, compaction trigger) of a run, in tokens."""
    # imported here: the commands that never need a model window should not pay for the registry
    from longrun.errors import ConfigError
    from longrun.providers.models_table import SCRIPTED_INFO
    from longrun.providers.registry import ProviderRegistry

    try:
        window = ProviderRegistry().model_info(spec.provider_key()).window
    except ConfigError:  # a provider only the workers register: the meter assumes the scripted window
        window = SCRIPTED_INFO.window
    return spec.context.limit(window), spec.context.effective_trigger(window)


def context_points(records: list[AuditRecord]) -> list[render.Point]:
    """One point per model request (its calibrated size); a compaction marks the request before it."""
    points: list[render.Point] = []
    for r in records:
        e = r.event
        if isinstance(e, ModelCalled):
            points.append(render.Point(turn=e.turn, tokens=e.calibrated_tokens))
        elif isinstance(e, CompactionDone) and points and e.report.outcome in ("applied", "summary_rejected"):
            last = points[-1]
            points[-1] = render.Point(last.turn, last.tokens, True, e.report.tokens_after_calibrated)
    return points


__all__ = ["SCRIPTED_NOTE", "clip", "context_limits", "context_points", "describe_compaction", "describe_compaction_started",
           "describe_event", "describe_notification", "describe_provider_context"]
