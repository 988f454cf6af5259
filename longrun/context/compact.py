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

from longrun.context import index
from longrun.context.enforce import choose_cut, tail_floor
from longrun.context.microcompact import microcompact
from longrun.context.render import summary_text
from longrun.context.state_block import render_state_block
from longrun.context.summary import (
    ExtractiveSummarizer,
    Summarizer,
    fit_index,
    join_summary,
    split_summary,
    user_texts,
    validate_summary,
)
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
from longrun.models.context import CompactionReport, Projection, Stage, TranscriptItem, Trigger
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
    limit; then a stage boundary fires, then the threshold on calibrated tokens."""
    if operator:
        return "operator"
    over_limit = request_tokens_calibrated > policy.limit(window)
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
) -> Projection:
    """The next projection of the transcript `items` (the whole transcript, seq-ordered).

    Args:
        previous: the current projection; its messages and summary are the starting point and
            entries after its `covers_through_seq` are added to them.
        force: run microcompact (every eligible result) and summarize even under the target
            (a stage boundary or an operator asking for it).

    Returns:
        The projection with version previous.version + 1 (or 1), based on state.state_version,
        covering through the last item; its report says what was done and why.
    """
    t0 = time.perf_counter()
    ordered = sorted(items, key=lambda it: it.seq)
    cover_prev = previous.covers_through_seq if previous is not None else 0
    view: list[Message] = list(previous.messages) if previous is not None else []
    view.extend(it.message for it in ordered if it.seq > cover_prev)
    summary = previous.summary if previous is not None else None
    covers = max(cover_prev, ordered[-1].seq if ordered else 0)

    ratio = calibration.ratio if calibration.ratio > 0 else 1.0
    limit = policy.limit(window)
    target = min(int(policy.effective_trigger(window) * policy.target_ratio), limit)
    limit_est, target_est = int(limit / ratio), int(target / ratio)
    fixed = (estimate_text(system) + estimate_tools(tools) + REQUEST_OVERHEAD
             + MESSAGE_OVERHEAD + BLOCK_OVERHEAD + estimate_text(render_state_block(state)))
    ests = [estimate_message(m) for m in view]

    def total() -> int:
        return fixed + _summary_cost(summary) + sum(ests)

    before = total()
    report = CompactionReport(
        trigger=trigger, tokens_before_estimated=before, tokens_before_calibrated=calibration.apply(before),
        base_state_version=state.state_version, budget=limit,
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

    # Stage 1: microcompact.
    if total() > target_est or force:
        stages.append("microcompact")
        now = total()
        r1 = microcompact(view, ests, policy=policy, excess=None if force else now - target_est)
        if r1.changed:
            view = r1.messages
            changed = True
            cleared += len(r1.cleared)
        freed["microcompact"] = max(0, now - total())

    # Stage 2: summarize, only when the cheap stages did not reach the target.
    if total() > target_est or force:
        now = total()
        kept = (view, ests, summary, report.model_copy())
        done = _summarize(view, ests, summary, state=state, policy=policy, report=report, summarizer=summarizer,
                          fixed=fixed, target_est=target_est, limit_est=limit_est)
        if done is not None:
            summary, cut = done
            view, ests = view[cut:], ests[cut:]
            if total() >= now:
                # a summary no smaller than what it replaced only costs a cache rewrite: undo it
                view, ests, summary, undone = kept
                for name in ("messages_summarized", "summary_tokens", "summary_source", "summary_rejected_reason"):
                    setattr(report, name, getattr(undone, name))
            else:
                stages.append("summarize")
                changed = True
                freed["summarize"] = now - total()

    # Stage 3: hard limit. The oldest whole turns go (their results join the index); when even the
    # summary and the open tool cycle do not fit, the oldest index lines go, counted.
    if total() > limit_est:
        stages.append("enforce")
        now = total()
        last = open_cycle_start(view)
        suffix_last = sum(ests[last:])
        before_summary = summary
        summary = fit_index(summary, fixed + _summary_cost(summary) + suffix_last - limit_est)
        room = limit_est - fixed - _summary_cost(summary)
        c = choose_cut(view, ests, room, min(tail_floor(view, policy.min_tail_turns), last))
        if c is None:
            c = choose_cut(view, ests, room, last)
        if c is None:
            ok = cut_points(view)
            c = max(i for i in range(last + 1) if ok[i])
        changed = changed or summary != before_summary
        if c:
            summary = _index_dropped(summary, view[:c], tool_uses_by_id(view[:c]))
            view, ests = view[c:], ests[c:]
            report.dropped_messages = c
            changed = True
            summary = fit_index(summary, total() - limit_est)
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
    )


def _summarize(
    view: list[Message],
    ests: list[int],
    previous_summary: str | None,
    *,
    state: TaskState,
    policy: ContextPolicy,
    report: CompactionReport,
    summarizer: Summarizer | None,
    fixed: int,
    target_est: int,
    limit_est: int,
) -> tuple[str, int] | None:
    """(new summary, cut) or None when there is nothing worth summarizing.

    The summary is the summarizer's body (capped at `max_summary_tokens`), the results index
    (one line per summarized result, folded forward) and the human's messages verbatim. The tail
    kept verbatim is sized in tokens (`tail_tokens`, less when the target needs it, counting the
    index lines the cut adds), cut at a turn boundary that splits no tool pair, and holds at least
    `min_tail_turns` turns when that still fits under the hard limit. The open tool cycle is
    always in the tail."""
    n = len(view)
    ok = cut_points(view)
    last = open_cycle_start(view)
    if last == 0:
        return None
    valid = [c for c in range(1, last + 1) if ok[c]]
    if not valid:
        return None
    prev_body, prev_cut, prev_lines, prev_users = split_summary(previous_summary)
    suffix = [0] * (n + 1)
    for i in range(n - 1, -1, -1):
        suffix[i] = suffix[i + 1] + ests[i]
    line_costs = index.message_entry_costs(view[:last])
    grown = [0] * (last + 1)  # index tokens the results of view[:c] add
    for i, c in enumerate(line_costs):
        grown[i + 1] = grown[i] + c
    max_tokens = min(policy.max_summary_tokens, max(200, target_est // 5))
    user_cap = min(max(2_000, policy.tail_tokens // 2), max(200, target_est // 5))
    allowance = max_tokens + user_cap + index.cost(prev_cut, prev_lines) + 2 * MESSAGE_OVERHEAD + BLOCK_OVERHEAD + 20
    room = target_est - fixed - allowance
    cut = next((c for c in valid if suffix[c] <= policy.tail_tokens and suffix[c] + grown[c] <= room), valid[-1])
    floor = tail_floor(view, policy.min_tail_turns)
    if cut > floor:
        wider = [c for c in valid if c <= floor]
        if wider and fixed + allowance + grown[wider[-1]] + suffix[wider[-1]] <= limit_est:
            cut = wider[-1]

    replaced = view[:cut]
    replaced_tokens = sum(ests[:cut]) + (estimate_text(prev_body) if prev_body else 0)
    users = _cap_users(prev_users + user_texts(replaced), user_cap)
    lines = index.fold(prev_lines, index.entries(replaced))

    body: str | None = None
    if summarizer is not None:
        reason: str | None
        try:
            candidate = summarizer.summarize(replaced, prev_body, state, max_tokens)
            reason = validate_summary(candidate, replaced_tokens, state)
            if reason is None and estimate_text(candidate) > max_tokens * 1.2:
                reason = f"summary ({estimate_text(candidate)} tokens) exceeds max_summary_tokens ({max_tokens})"
        except Exception as exc:  # a failing model summarizer must not fail the compaction
            reason = f"summarizer failed: {type(exc).__name__}: {exc}"
        if reason is None:
            body = candidate
            report.summary_source = "extractive" if isinstance(summarizer, ExtractiveSummarizer) else "model"
        else:
            report.summary_rejected_reason = reason
    if body is None:
        body = ExtractiveSummarizer().summarize(replaced, prev_body, state, max_tokens)
        report.summary_source = "extractive"
    full = join_summary(body, prev_cut, lines, users)
    report.messages_summarized = cut
    report.summary_tokens = estimate_text(full)
    return full, cut


def _index_dropped(summary: str | None, dropped: list[Message], uses: dict[str, Any]) -> str | None:
    """The summary with the results of messages stage 3 dropped added to its index."""
    new = index.entries(dropped, uses)
    if not new:
        return summary
    body, cut, lines, users = split_summary(summary)
    return join_summary(body, cut, index.fold(lines, new), users)


def _cap_users(texts: list[str], cap: int) -> list[str]:
    """The human's messages, verbatim, newest first up to `cap` tokens (the first one, usually the
    task, is kept too when it fits); older ones stay in the transcript."""
    kept: list[str] = []
    used = 0
    for t in reversed(texts):
        cost = estimate_text(t)
        if used + cost > cap:
            continue
        kept.append(t)
        used += cost
    return list(reversed(kept))
