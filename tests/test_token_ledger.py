"""The token cap's count in the spend ledger (issue 28): the turn's first read carries the answered
tokens of the run and its subagents (no statement of its own), each answered request counted once,
never a request whose answer was lost. A parent's count holds its subagents' tokens (they always
counted in its usage and caps: README, Subagents); a subagent's holds its own, not its parent's
or its siblings'. Real PostgreSQL; the whole-run checks are in tests/test_spend_crash.py and
tests/test_reliability_caps.py."""

from __future__ import annotations

from longrun.models.provider import Usage
from longrun.models.spec import RunSpec
from longrun.store import Store


def answered(store: Store, run_id: str, turn: int, usage: Usage, *, attempt: int = 1) -> None:
    store.record_request_sent(run_id, turn=turn, overflow_retry=0, attempt=attempt, model="priced:v1", estimate_usd=0.01)
    store.settle_turn(run_id, turn=turn, transcript_seq=10 * turn, usage=usage, cost_usd=0.02)


def test_the_turn_read_counts_the_tokens_of_the_run_and_its_subagents_once(store: Store) -> None:
    spec = RunSpec(objective="o", workspace="/tmp")
    store.create_run("root", spec)
    store.create_run("child", spec, parent_run_id="root")
    store.create_run("sibling", spec, parent_run_id="root")
    store.create_run("grandchild", spec, parent_run_id="child")
    store.create_run("other", spec)
    assert store.load_turn_head("root").ledger_tokens == 0, "no request yet"

    answered(store, "root", 1, Usage(input_tokens=1_000, output_tokens=50, cache_read_input_tokens=200,
                                     cache_creation_input_tokens=30))
    store.settle_turn("root", turn=1, transcript_seq=10, usage=Usage(input_tokens=99_999), cost_usd=1.0)  # a retry
    # turn 2: an attempt whose answer a crash lost (sent, never settled), then the retry's answer
    store.record_request_sent("root", turn=2, overflow_retry=0, attempt=1, model="priced:v1", estimate_usd=0.01)
    answered(store, "root", 2, Usage(input_tokens=2_000, output_tokens=100), attempt=2)
    store.record_request_sent("root", turn=3, overflow_retry=0, attempt=1, model="priced:v1", estimate_usd=0.01)
    answered(store, "child", 1, Usage(input_tokens=5_000, output_tokens=500))
    answered(store, "sibling", 1, Usage(input_tokens=300))
    answered(store, "grandchild", 1, Usage(input_tokens=40_000))
    answered(store, "other", 1, Usage(input_tokens=777_000))

    own = 1_000 + 50 + 200 + 30 + 2_000 + 100
    assert store.run_spend(["root"])["root"].tokens == own, "answered once each; lost and unsettled add none"
    assert store.load_turn_head("root").ledger_tokens == own + 5_500 + 300 + 40_000, "with every subagent's"
    assert store.load_turn_head("child").ledger_tokens == 5_500 + 40_000, "its own and its subagent's only"
    assert store.load_turn_head("sibling").ledger_tokens == 300
    assert store.load_turn_head("other").ledger_tokens == 777_000, "another family counts nothing of this one"
    assert store.family_spend("grandchild").tokens == own + 5_500 + 300 + 40_000
