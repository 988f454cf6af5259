"""Stage 2 of `compact`: the summary that replaces the oldest turns, and the tail kept verbatim.

Split from compact.py by job: `compact` decides when each stage runs and keeps the totals; this
module decides what a summary holds (the body, the results index, the human's messages quoted
verbatim, the fact ledger selected from the store) and where the verbatim tail begins, under the
budget, by information rather than by age (docs/CONTEXT.md, The summary).
"""

from __future__ import annotations

from collections.abc import Sequence

from longrun.context import extract, humans, index, layout, ledger
from longrun.context import facts as facts_mod
from longrun.context.enforce import tail_floor
from longrun.context.factstore import FactStore
from longrun.context.layout import user_texts
from longrun.context.state_block import shown_notes
from longrun.context.summary import ExtractiveSummarizer, Summarizer, validate_summary
from longrun.context.tokens import BLOCK_OVERHEAD, MESSAGE_OVERHEAD, estimate_text
from longrun.context.transcript import cut_points, open_cycle_start, tool_uses_by_id
from longrun.models.blocks import Message
from longrun.models.context import CompactionReport, TranscriptItem
from longrun.models.spec import ContextPolicy
from longrun.models.state import TaskState


def summarize_stage(
    view: list[Message],
    original: list[Message],
    ests: list[int],
    previous_summary: str | None,
    previous_users: list[str] | None,
    *,
    state: TaskState,
    policy: ContextPolicy,
    report: CompactionReport,
    summarizer: Summarizer | None,
    fixed: int,
    target_est: int,
    facts_est: int,
    limit_est: int,
    notes_tokens: int,
    store: FactStore,
    items: Sequence[TranscriptItem],
    seqs: Sequence[int],
) -> tuple[str, int, list[str]] | None:
    """(new summary, cut) or None when there is nothing worth summarizing.

    The summary is the summarizer's body, the results index (one line per summarized result,
    folded forward), the human's messages verbatim and the fact ledger (`ledger.py`). `original`
    is `view` before this compaction's stages 0 and 1, so the ledger quotes results those stages
    just replaced by references.

    Budget, by information rather than by age: the tail kept verbatim is sized in tokens
    (`tail_tokens`, less when the target needs it), cut at a turn boundary that splits no tool
    pair, holding at least `min_tail_turns` turns when the target still holds with them, and
    only as large as leaves room for the whole ledger; the ledger then takes what it needs (its
    least informative lines go first when even the smallest tail leaves too little), and the
    body gets the rest, up to `max_summary_tokens`. The open tool cycle is always in the tail."""
    n = len(view)
    ok = cut_points(view)
    last = open_cycle_start(view)
    if last == 0:
        return None
    valid = [c for c in range(1, last + 1) if ok[c]]
    if not valid:
        return None
    prev = layout.parse(previous_summary, previous_users)
    hint_of = {b.id: f"{b.name} {index.input_hint(b.input)}" for b in tool_uses_by_id(original).values()}
    suffix = [0] * (n + 1)
    for i in range(n - 1, -1, -1):
        suffix[i] = suffix[i + 1] + ests[i]
    line_costs = index.message_entry_costs(view[:last])
    fact_costs = [sum(ledger.entry_cost(ledger.Entry(u)) for u in ledger.units_of([m], hint_of)) for m in original[:last]]
    grown = [0] * (last + 1)  # index and ledger tokens the messages view[:c] add, at most
    for i in range(last):
        grown[i + 1] = grown[i] + line_costs[i] + fact_costs[i]
    compactable = max(0, target_est - fixed)  # what the summary and the tail share at the target
    max_tokens = min(policy.max_summary_tokens, max(200, compactable // 2))
    user_cap = min(max(2_000, policy.tail_tokens // 2), max(200, compactable // 5))
    body_floor = min(max_tokens, BODY_FLOOR)
    overhead = 2 * MESSAGE_OVERHEAD + BLOCK_OVERHEAD + 40
    carried = index.cost(prev.cut, prev.lines) + ledger.cost(prev.left_out, prev.facts) + humans.cost(prev.users)
    allowance = body_floor + min(user_cap, carried) + carried + overhead
    room = target_est - fixed - allowance
    cut = next((c for c in valid if suffix[c] <= policy.tail_tokens and suffix[c] + grown[c] <= room), valid[-1])
    floor = tail_floor(view, policy.min_tail_turns)
    cuts = [cut]
    if cut > floor:
        # min_tail_turns, when the target still holds with it: a compaction that lands over its
        # target only makes the next one fire at once. Tried first; when the facts then do not
        # all fit, the tail the ledger was sized for is tried after it (a fact outranks a turn
        # kept verbatim beyond what the ledger leaves room for; its words stay in the summary's
        # store and ledger, and the transcript keeps the turn).
        wider = [c for c in valid if c <= floor]
        if wider and fixed + allowance + suffix[wider[-1]] <= target_est:
            cuts.insert(0, wider[-1])

    body_min = min(BODY_MIN, max_tokens // 2)
    hidden_notes = shown_notes(list(state.notes), notes_tokens)[0]
    for cut in cuts:
        replaced = view[:cut]
        replaced_tokens = sum(ests[:cut]) + (estimate_text(prev.body) if prev.body else 0)
        index_cut, lines = index.bound(prev.cut, index.fold(prev.lines, index.entries(replaced)), index.cap(limit_est))
        store.extend(extract.units_after(store, items, seqs[cut - 1], state, hidden_notes))

        # The human's messages: those with an instruction or facts the ledger cannot carry whole
        # first, then the ledger (a selection from every current fact, by priority class), then,
        # in the room left and only when no fact was left out, the messages without a fact
        # (context, chatter) whose lines the ledger does not show. A message all of whose lines
        # later ones replaced is not quoted (it would read as current); one the ledger carries
        # whole is left to it.
        offered = [t for t in dict.fromkeys(prev.users + user_texts(replaced))
                   if not humans.is_opening(t, state) and humans.quotable(t)]
        stale = store.replaced_values("user")
        offered = [t for t in offered if not (stale and set(_unit_texts(t)) <= stale)]
        first = humans.cap([t for t in offered if humans.instructs(t) or humans.states_facts(t)], user_cap)
        shown = {u for t in first for u in _unit_texts(t)}
        entries = [e for e in store.entries()
                   if not e.unit.quoted and not (e.unit.source == "user" and e.unit.text in shown)]
        free = target_est - fixed - overhead - suffix[cut] - index.cost(index_cut, lines) - humans.cost(first)
        shared = max(free, max_tokens)  # body and ledger together: when the tail leaves no room, what the body had alone
        # the facts may fill the room up to their own aim (`aim.facts_aim`), past the one the tail and body aim at
        facts_room = max(shared, shared + facts_est - target_est)
        left_out, facts = ledger.select(entries, facts_room - body_min)
        if left_out:  # the facts are short of room: the body yields its floor to them (the state block has the goal)
            left_out, facts = ledger.select(entries, facts_room)
        if not left_out:
            break
    chosen = {e.unit.text for e in facts}
    room = min(user_cap - humans.cost(first), shared - (0 if left_out else body_min) - ledger.cost(left_out, facts))
    # no context-only quote while a fact is left out: a message without an instruction or a fact
    # tells the run less than any fact the store holds (issue 25)
    others = [t for t in offered if t not in first and not chosen & set(_unit_texts(t))] if not left_out else []
    more = humans.cap(others, max(0, room))
    users = [t for t in offered if t in set(first) | set(more)]
    body_tokens = min(max_tokens, shared - ledger.cost(left_out, facts) - humans.cost(more))
    if body_tokens < body_min and not left_out:
        body_tokens = body_min

    body: str | None = None
    if body_tokens < BODY_SKIP:
        # no room for a body that would say more than the state block does: none at all
        body_tokens, summarizer = 0, None
        report.summary_source = "none"
    elif summarizer is not None:
        reason: str | None
        try:
            candidate = summarizer.summarize(replaced, prev.body, state, body_tokens)
            reason = validate_summary(candidate, replaced_tokens, state)
            if reason is None and estimate_text(candidate) > body_tokens * 1.2:
                reason = f"summary ({estimate_text(candidate)} tokens) exceeds its budget ({body_tokens} tokens)"
        except Exception as exc:  # a failing model summarizer must not fail the compaction
            reason = f"summarizer failed: {type(exc).__name__}: {exc}"
        if reason is None:
            body = candidate
            report.summary_source = "extractive" if isinstance(summarizer, ExtractiveSummarizer) else "model"
        else:
            report.summary_rejected_reason = reason
    if body is None and body_tokens:
        body = ExtractiveSummarizer(facts=False).summarize(replaced, prev.body, state, body_tokens)
        report.summary_source = "extractive"
    full = layout.SummaryParts(body, index_cut, lines, users, left_out, facts).render()
    report.messages_summarized = cut
    report.summary_tokens = estimate_text(full)
    report.ledger_facts = len(facts)
    report.ledger_left_out = left_out
    return full, cut, users


BODY_FLOOR = 300
"""Tokens the summarizer's body is planned for when the tail is sized."""
BODY_MIN = 60
BODY_SKIP = 40
"""Under this many tokens a body would be the objective cut short and the next step, both in the
state block anyway: when the facts need the room, the summary has no body."""
"""Tokens the body gets at least, whatever the ledger needs: the goal and the next step (the task
state carries both whole). It was 150, which spent a tenth of a 1k budget on progress lines while
the ledger left facts out (issue 25)."""


def _unit_texts(text: str) -> list[str]:
    """The fact store's unit texts of a human message (as `ledger.units_of` splits it)."""
    return facts_mod.split_units(text)


