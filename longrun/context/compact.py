"""`compact`: the next projection of a transcript, cheapest stages first; `should_compact`: when.

Stage 0 (trim) always runs. Microcompact runs when the projection is over the target
(`effective_trigger x target_ratio`), summarize only when microcompact did not reach it, and
enforcement only when the result is still over the hard limit. Per-message estimates are
computed once per call and updated only for the messages a stage changes.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from longrun.context import extract, index, layout, ledger
from longrun.context.aim import aim, facts_aim, turn_growth
from longrun.context.enforce import choose_cut, tail_floor
from longrun.context.factstore import FactStore
from longrun.context.microcompact import microcompact
from longrun.context.render import summary_text
from longrun.context.state_block import notes_budget, render_state_block
from longrun.context.summarize_stage import summarize_stage
from longrun.context.summary import Summarizer
from longrun.context.tokens import (
    BLOCK_OVERHEAD,
    MESSAGE_OVERHEAD,
    REQUEST_OVERHEAD,
    Calibration,
    estimate_message,
    estimate_text,
    estimate_tools,
)
from longrun.context.transcript import cut_points, open_cycle_start, tool_uses_by_id
from longrun.context.trim import trim_heavy
from longrun.models.blocks import Message
from longrun.models.context import CompactionReport, FactRow, Projection, Stage, TranscriptItem, Trigger
from longrun.models.provider import ToolSpec
from longrun.models.spec import ContextPolicy
from longrun.models.state import TaskState


def should_compact(
    request_tokens_calibrated: int,
    *,
    policy: ContextPolicy,
    window: int,
    last_compaction_turn: int | None,
    turn: int,
    stage_boundary: bool = False,
    operator: bool = False,
) -> Trigger | None:
    """Which trigger fires for the request just sent, if any.

    An operator's request always fires. Otherwise no compaction runs on the turn right after
    another one (its cache rewrite has not paid off yet) unless the request is over the hard
    limit; then a stage boundary fires, then the threshold on calibrated tokens.

    In `provider` context mode the provider manages the pressure (docs/CONTEXT.md, Modes): only
    a request over the hard limit fires (and an overflow, which the workflow answers itself)."""
    if operator:
        return "operator"
    over_limit = request_tokens_calibrated > policy.limit(window)
    if policy.mode == "provider":
        return "threshold" if over_limit else None
    recent = last_compaction_turn is not None and turn - last_compaction_turn <= 1
    if recent and not over_limit:
        return None
    if stage_boundary:
        return "stage_boundary"
    if over_limit or request_tokens_calibrated >= policy.effective_trigger(window):
        return "threshold"
    return None


def _summary_cost(summary: str | None) -> int:
    if not summary:
        return 0
    return MESSAGE_OVERHEAD + BLOCK_OVERHEAD + estimate_text(summary_text(summary))


def compact(
    items: Sequence[TranscriptItem],
    *,
    previous: Projection | None,
    state: TaskState,
    policy: ContextPolicy,
    window: int,
    trigger: Trigger,
    calibration: Calibration,
    summarizer: Summarizer | None = None,
    system: str = "",
    tools: Sequence[ToolSpec] = (),
    force: bool = False,
    facts: FactStore | Sequence[FactRow] | None = None,
) -> Projection:
    """The next projection of the transcript `items` (the whole transcript, seq-ordered).

    Args:
        previous: the current projection; its messages and summary are the starting point and
            entries after its `covers_through_seq` are added to them.
        force: run microcompact (every eligible result) and summarize even under the target
            (an operator asking for it, a provider overflow). A `stage_boundary` trigger runs
            microcompact on every eligible result, and summarizes only over the target.
        facts: the run's fact store (`factstore`), as data; never modified. None or empty: the
            facts of every entry up to what this compaction summarizes are read from `items`
            (offline, and the first compaction of a run written before the store).

    Returns:
        The projection with version previous.version + 1 (or 1), based on state.state_version,
        covering through the last item; its report says what was done and why; its `new_facts`
        are the rows to add to the store with it.
    """
    t0 = time.perf_counter()
    ordered = sorted(items, key=lambda it: it.seq)
    cover_prev = previous.covers_through_seq if previous is not None else 0
    view: list[Message] = list(previous.messages) if previous is not None else []
    view.extend(it.message for it in ordered if it.seq > cover_prev)
    original = list(view)
    seqs = extract.view_seqs(ordered, cover_prev, len(previous.messages) if previous is not None else 0)
    store = FactStore(facts.rows if isinstance(facts, FactStore) else (facts or ()))
    known_rows = len(store.rows)
    summary = previous.summary if previous is not None else None
    users = previous.summary_users if previous is not None else None  # the quoted human messages, as data
    covers = max(cover_prev, ordered[-1].seq if ordered else 0)

    ratio = calibration.ratio if calibration.ratio > 0 else 1.0
    limit = policy.limit(window)
    limit_est = int(limit / ratio)
    notes_tokens = notes_budget(limit)
    fixed = (estimate_text(system) + estimate_tools(tools) + REQUEST_OVERHEAD
             + MESSAGE_OVERHEAD + BLOCK_OVERHEAD + estimate_text(render_state_block(state, notes_tokens)))
    trigger_est = int(policy.effective_trigger(window) / ratio)
    target_est = aim(trigger_est, fixed, policy.target_ratio, limit_est)
    ests = [estimate_message(m) for m in view]
    facts_est = facts_aim(trigger_est, fixed, policy.target_ratio, limit_est, turn_growth(ests))

    def total() -> int:
        return fixed + _summary_cost(summary) + sum(ests)

    before = total()
    report = CompactionReport(
        trigger=trigger, tokens_before_estimated=before, tokens_before_calibrated=calibration.apply(before),
        base_state_version=state.state_version, budget=limit, target_tokens=calibration.apply(target_est),
        facts_target_tokens=calibration.apply(facts_est),
    )
    stages: list[Stage] = ["trim"]
    freed: dict[str, int] = {}
    changed = False

    # Stage 0: heavy artifacts, always.
    r0 = trim_heavy(view, max_result_tokens=policy.artifact_trim_tokens)
    if r0.changed:
        view = r0.messages
        for i in r0.changed:
            ests[i] = estimate_message(view[i])
        changed = True
    freed["trim"] = max(0, before - total())
    cleared = len(r0.cleared)

    # Stage 1: microcompact. A stage boundary clears every eligible result (when that frees at
    # least clear_at_least): the work on them is done, whatever the size of the request.
    proactive = force or trigger == "stage_boundary"
    if total() > target_est or proactive:
        stages.append("microcompact")
        now = total()
        r1 = microcompact(view, ests, policy=policy, excess=None if proactive else now - target_est)
        if r1.changed:
            view = r1.messages
            changed = True
            cleared += len(r1.cleared)
        freed["microcompact"] = max(0, now - total())

    # Stage 2: summarize, only when the cheap stages did not reach the target.
    if total() > target_est or force:
        now = total()
        kept = (view, ests, summary, users, report.model_copy(), seqs)
        kept_original = list(original)
        trial = FactStore(store.rows)
        done = summarize_stage(view, original, ests, summary, users, state=state, policy=policy, report=report,
                          summarizer=summarizer, fixed=fixed, target_est=target_est, facts_est=facts_est, limit_est=limit_est,
                          notes_tokens=notes_tokens, store=trial, items=ordered, seqs=seqs)
        if done is not None:
            summary, cut, users = done
            view, ests, original, seqs = view[cut:], ests[cut:], original[cut:], seqs[cut:]
            if now - total() < min(policy.clear_at_least, (now - target_est) // 2) or total() >= now:
                # a summary that frees less than half the way to the target (or clear_at_least)
                # only costs a cache rewrite and blocks the next compaction: undo it
                view, ests, summary, users, undone, seqs = kept
                original = list(kept_original)
                for name in ("messages_summarized", "summary_tokens", "summary_source", "summary_rejected_reason",
                             "ledger_facts", "ledger_left_out"):
                    setattr(report, name, getattr(undone, name))
            else:
                stages.append("summarize")
                changed = True
                freed["summarize"] = now - total()
                store = trial

    # Stage 3: hard limit. The oldest whole turns go (their results join the index and their facts
    # the store); when even the summary and the open tool cycle do not fit, the oldest index lines,
    # the least informative facts, the oldest quoted messages and the body go, counted.
    if total() > limit_est:
        stages.append("enforce")
        now = total()
        last = open_cycle_start(view)
        suffix_last = sum(ests[last:])
        before_summary = summary
        summary, users, quotes_cut = layout.fit_all(summary, fixed + _summary_cost(summary) + suffix_last - limit_est, users)
        room = limit_est - fixed - _summary_cost(summary)
        c = choose_cut(view, ests, room, min(tail_floor(view, policy.min_tail_turns), last))
        if c is None:
            c = choose_cut(view, ests, room, last)
        if c is None:
            ok = cut_points(view)
            c = max(i for i in range(last + 1) if ok[i])
        changed = changed or summary != before_summary
        if c:
            summary = _index_dropped(summary, users, view[:c], original[:c], tool_uses_by_id(view[:c]),
                                     store, ordered, seqs[c - 1], state, index.cap(limit_est))
            view, ests, seqs = view[c:], ests[c:], seqs[c:]
            report.dropped_messages = c
            changed = True
            summary, users, more_cut = layout.fit_all(summary, total() - limit_est, users)
            quotes_cut += more_cut
        report.quotes_cut = quotes_cut
        freed["enforce"] = max(0, now - total())

    after = total()
    report.stages_run = stages
    report.freed_per_stage = freed
    report.cleared_results = cleared
    report.tokens_after_estimated = after
    report.tokens_after_calibrated = calibration.apply(after)
    report.tail_messages = len(view) if "summarize" in stages else report.tail_messages
    report.tail_tokens = sum(ests) if "summarize" in stages else report.tail_tokens
    if not changed:
        report.outcome = "noop"
    elif report.summary_rejected_reason is not None:
        report.outcome = "summary_rejected"
    else:
        report.outcome = "applied"
    report.duration_ms = round((time.perf_counter() - t0) * 1000, 3)
    return Projection(
        version=(previous.version + 1) if previous is not None else 1,
        base_state_version=state.state_version,
        covers_through_seq=covers,
        summary=summary,
        messages=view,
        report=report,
        summary_users=layout.parse(summary, users).users if summary else None,
        new_facts=store.rows[known_rows:],
    )


def _index_dropped(summary: str | None, users: list[str] | None, dropped: list[Message], original: list[Message],
                   uses: dict[str, Any], store: FactStore, items: Sequence[TranscriptItem], through: int,
                   state: TaskState, index_cap: int) -> str | None:
    """The summary with the results of messages stage 3 dropped added to its index, and their
    facts to the store and its ledger."""
    new = index.entries(dropped, uses)
    hint_of = {k: f"{u.name} {index.input_hint(u.input)}" for k, u in uses.items()}
    units = ledger.units_of(original, hint_of)
    store.extend(extract.units_after(store, items, through, state))
    if not new and not units:
        return summary
    parts = layout.parse(summary, users)
    parts.cut, parts.lines = index.bound(parts.cut, index.fold(parts.lines, new), index_cap)
    parts.facts = ledger.fold(parts.facts, units)
    return parts.render()
