"""Updates said in other words (issue 25, cause 5): a line that says of itself that it changes
something ("now belongs to", "has changed", "rotated") replaces the earlier line it is most
specifically about, although they share no key, subject or topic; lines that merely look alike,
or that are about another subject, replace nothing. And what an update replaced decides where it
ranks: the new value of a typed record ranks with the record."""

from __future__ import annotations

from longrun.context import facts, ledger
from longrun.context.factstore import FactStore
from longrun.models import Message


def _current(*texts: str) -> list[str]:
    return [e.unit.text for e in ledger.fold([], ledger.units_of([Message.user_text(t) for t in texts], {}))]


def test_an_update_in_other_words_replaces_the_line_it_updates() -> None:
    assert _current("FACT: Maria Lopez is handling the incident rotation this week.",
                    "The incident rotation now belongs to Tom Reyes.") == ["The incident rotation now belongs to Tom Reyes."]
    assert _current("FACT: The go-live date is 2027-10-02.", "Go-live timing has changed: we now launch on March 3.") == [
        "Go-live timing has changed: we now launch on March 3."], "a month and a day are a date"
    assert _current("USER PREFERENCE: Keep replies formal and in British spelling.",
                    "New preference: make replies casual, with American spelling.") == [
        "New preference: make replies casual, with American spelling."]


def test_an_update_replaces_the_line_whose_shared_words_fewest_lines_say() -> None:
    out = _current("HARD CONSTRAINT: Field-trip expenses must stay at or below $700.",
                   "HARD CONSTRAINT: Hotel spending ceiling is $350.",
                   "HARD CONSTRAINT: Project spending ceiling is $900.",
                   "New ceiling for trip costs: keep them below $500.")
    assert out == ["HARD CONSTRAINT: Hotel spending ceiling is $350.", "HARD CONSTRAINT: Project spending ceiling is $900.",
                   "New ceiling for trip costs: keep them below $500."], "two lines say ceiling, one says trip"


def test_lines_that_only_look_alike_or_name_another_subject_replace_nothing() -> None:
    for pair in (("status of PLAT-4338: merged", "We can revisit the scheduler cleanup after this is merged; it's not blocking."),
                 ("TODO(FE-7955): backfill the media schema", "status of backfill-82: blocked on the VPN change"),
                 ("The billing-svc owner is Ana.", "The auth-svc now belongs to Bo."),
                 ("HARD CONSTRAINT: Never deploy on Fridays.", "USER PREFERENCE: Deploy notes now in bullet points."),
                 ("The scheduler runs in eu-west-2 and ledger-api depends on pg-main.", "Next action: rotate the keys for ledger-api."),
                 ("The primary database is Postgres 15 in eu-north-5.", "The on-call rotation this week is Ana Diaz in eu-north-5.")):
        assert _current(*pair) == list(pair), pair


def test_a_typed_record_a_preference_or_a_standing_instruction_is_a_fact_without_a_number_or_a_name() -> None:
    assert facts.analyse("FACT: Maria Lopez is handling the incident rotation this week.", "user").is_fact
    standing = facts.analyse("From now on, write every date in ISO format.", "user")
    assert standing.is_fact and standing.kind == "rule"
    assert facts.analyse("I would rather get warm answers with metric units.", "user").is_fact
    assert not facts.analyse("I would rather get warm answers with metric units.", "agent").is_fact, "only the human's"


def test_an_untyped_update_of_a_typed_record_ranks_with_the_record() -> None:
    store = FactStore()
    texts = ["FACT: Maria Lopez is handling the incident rotation this week.",
             *(f"The {s}-svc p99 latency is {i * 40}ms." for i, s in enumerate(("billing", "auth", "search", "media", "ledger"), 1)),
             "The incident rotation now belongs to Tom Reyes."]
    for t in texts:
        store.extend([(u, len(store.rows) + 1) for u in ledger.units_of([Message.user_text(t)], {})])
    entries = store.entries()
    update = [e for e in entries if e.unit.text.startswith("The incident rotation")]
    assert len(update) == 1 and len(entries) > 3
    left_out, kept = ledger.select(entries, ledger.cost(len(entries), update) + 30)
    assert left_out and [e.unit.text for e in kept] == ["The incident rotation now belongs to Tom Reyes."]
