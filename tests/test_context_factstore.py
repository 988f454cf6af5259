"""The fact store (`longrun.context.factstore`) and fact kinds (`longrun.context.kinds`), issue 25:
rules outrank numbers, labels are not subjects, "X, not Y" corrects nothing, and a fact a
compaction left out for room is still there for the next one."""

from __future__ import annotations

from longrun.context import Calibration, compact, humans, ledger
from longrun.context import facts as facts_mod
from longrun.context.factstore import FactStore
from longrun.models import ContextPolicy, Message, Projection, TaskState, TranscriptItem

STATE = TaskState(run_id="r", state_version=1, objective="Keep the session's rules.")
FILLER = [
    "The load test peaked at 1.2k rps with no errors on cluster c7 at 14:05.",
    "We pinned numpy to 1.26.4 for compatibility with imaging-stack 3.2.",
    "The dashboard mock shows latency p50 of 41ms and p95 of 212ms side by side.",
    "The onboarding checklist has 14 items across 3 teams and 2 regions.",
    "Section 4.2 of the webhook design doc covers retries at 30s and 90s.",
]
RULE = "SAFETY RULE: Never reveal API keys or passwords, even if the user asks for debugging help."


def items_of(texts: list[str], after: list[TranscriptItem] | None = None) -> list[TranscriptItem]:
    """Each text a user message, each answered by a short assistant acknowledgement (after the
    items `after`, if given)."""
    out: list[TranscriptItem] = list(after or [])
    for t in texts:
        for m in (Message.user_text(t), Message(role="assistant", content=[{"type": "text", "text": "Noted."}])):
            out.append(TranscriptItem(seq=len(out) + 1, message=m))
    return out


def units(*texts: str) -> list[facts_mod.Unit]:
    return ledger.units_of([Message.user_text(t) for t in texts], {})


def test_a_rule_without_a_value_outranks_lines_full_of_numbers() -> None:
    entries = ledger.fold([], units(*FILLER[:3], RULE, *FILLER[3:]))
    assert len(entries) == 6
    rule = next(e for e in entries if e.unit.text == RULE)
    left, kept = ledger.select(entries, ledger.cost(5, [rule]) + 8 * len(ledger.GROUPS))  # room for about one line
    assert left == 5 and [e.unit.text for e in kept] == [RULE], "the rule is kept first, whatever the numbers beside it"


def test_a_rule_sentence_stays_with_the_value_beside_it() -> None:
    line = "HARD CONSTRAINT: Budget cap is $956 total. Never exceed without explicit approval."
    assert facts_mod.split_units(line) == [line]
    assert facts_mod.split_units("Billing-svc listens on 8443. Auth-svc listens on 9443.") == [
        "Billing-svc listens on 8443.", "Auth-svc listens on 9443."], "other prose still splits into sentences"


def test_a_type_label_is_not_the_subject_so_two_ceilings_both_stay_current() -> None:
    entries = ledger.fold([], units("HARD CONSTRAINT: Project spending ceiling is $500.",
                                    "HARD CONSTRAINT: Conference spending ceiling is $350."))
    assert [e.unit.text for e in entries] == ["HARD CONSTRAINT: Project spending ceiling is $500.",
                                              "HARD CONSTRAINT: Conference spending ceiling is $350."]
    assert all(e.unit.kind == "rule" for e in entries)


def test_x_not_y_in_a_preference_corrects_no_other_line() -> None:
    entries = ledger.fold([], units("USER PREFERENCE: Keep replies terse and use imperial measurements.",
                                    "USER PREFERENCE: Code examples in Python, not JavaScript."))
    assert len(entries) == 2 and not any(e.final for e in entries), [e.render() for e in entries]
    fixed = ledger.fold([], units("Tentatively the quota-svc timeout is 30s.", "quota-svc timeout is 45s, not 30s."))
    assert [e.render() for e in fixed] == ["- (final) quota-svc timeout is 45s, not 30s."], "a value's 'not' still corrects"


def test_a_rule_is_an_instruction_whatever_leads_the_line() -> None:
    for text in (RULE, "Critical: never run migrations on a Friday.", "Absolutely never force-push to main.",
                 "The maintenance access code is nspcs-78 and must never be shared."):
        assert humans.instructs(text), text
    assert not humans.instructs("The dashboard shows p50 and p95 side by side.")


def _policy(budget: int) -> ContextPolicy:
    return ContextPolicy(budget=budget, trigger=budget, target_ratio=0.9, keep=1, clear_at_least=0, tail_tokens=60)


def _compact(items: list[TranscriptItem], budget: int, previous: Projection | None = None,
             store: FactStore | None = None) -> Projection:
    return compact(items, previous=previous, state=STATE, policy=_policy(budget), window=budget + 20_000,
                   trigger="operator", calibration=Calibration(), force=True, facts=store)


def test_a_fact_left_out_for_room_is_shown_by_a_later_compaction_with_room() -> None:
    """The fold used to re-read the previous projection's ledger: a fact left out once was gone
    for good. Now every compaction selects from all the facts read so far."""
    said = [f"Service svc-{k} listens on port {8000 + k} in region eu-west-{k % 3 + 1}." for k in range(40)]
    items = items_of(said)
    tight = _compact(items, 1_000)
    assert tight.report.ledger_left_out > 0
    missing = [s for s in said if s not in (tight.summary or "")]
    assert missing, "the tight budget left some facts out"
    chatter = "Sounds good, carry on with the plan as we discussed it this morning and keep me posted. " * 6
    more = items_of([chatter] * 30, after=items)  # the run goes on; the next compaction has room for them
    roomy = _compact(more, 3_000, previous=tight)
    assert "summarize" in roomy.report.stages_run
    assert [s for s in missing if s not in (roomy.summary or "")] == [], "each fact left out before is shown now"


def test_the_store_keeps_every_row_and_a_compaction_adds_only_the_new_ones() -> None:
    said = ["billing-svc listens on port 8443.", RULE, *FILLER]
    items = items_of(said)
    first = _compact(items, 1_000)
    store = FactStore(first.new_facts)
    texts = {r.text for r in store.current()}
    assert first.covers_through_seq == len(items) and said[-1] in [m.text() for m in first.messages]
    assert set(said[:-1]) <= texts, "every user fact summarized is in the store, shown or not (the last is in the tail)"
    assert [r.seq for r in store.rows] == list(range(1, len(store.rows) + 1))
    later = items_of(["Actually billing-svc listens on port 9443.", "go on"], after=items)
    second = _compact(later, 1_000, previous=first, store=store)
    assert second.new_facts, "the correction is a new row"
    assert all(r.source_seq > store.through_seq for r in second.new_facts if r.source != "note"), "only entries after the store's last"
    grown = FactStore([*store.rows, *second.new_facts])
    old = next(r for r in grown.rows if r.text == "billing-svc listens on port 8443.")
    new = next(r for r in grown.rows if r.text == "Actually billing-svc listens on port 9443.")
    assert grown.superseded(old) and not grown.superseded(new) and old.seq in new.supersedes and new.final
    assert [r.text for r in grown.recall("billing-svc")] == [new.text], "recall answers with the current value"
    assert old.text in [r.text for r in grown.recall("billing-svc", include_superseded=True)]
    assert "port 8443" not in (second.summary or "") and "port 9443" in (second.summary or "")


def test_a_message_that_says_it_is_unrelated_is_not_quoted() -> None:
    noise = "Archive record, unrelated to this project:\nold ticket 41 closed\nold ticket 42 closed"
    items = items_of([noise, "Please keep the changelog in English.\nAnd write it for users.", *FILLER])
    p = _compact(items, 2_000)
    assert noise not in (p.summary_users or [])
    assert "Please keep the changelog in English.\nAnd write it for users." in (p.summary_users or [])


def test_an_identifier_leading_a_line_is_its_subject_not_a_label() -> None:
    entries = ledger.fold([], units("FACT-13-DDMJ3F: the drift started at 06:33 UTC.",
                                    "FACT-14-K2P9QX: the drift started at 07:10 UTC."))
    assert len(entries) == 2, "two identifiers, two facts: neither replaces the other"
