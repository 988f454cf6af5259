"""The conformance benchmark (bench/conformance.py, bench/kit_adapter.py): longrun as a
compaction-conformance-kit compactor, and the fold protocol on one small kit session end to end.

These check the adapter and the protocols, not how much longrun keeps (BENCHMARKS.md has that):
the kit's probe keeps every canary of the raw transcript and none of an empty text, the adapter's
first round is what `longrun compact` prints, every request of the fold fits its
budget, and the per-type counts add up to the canaries planted so far. No database, no Temporal.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("compaction_kit", reason="compaction-conformance-kit is in the dev and bench extras: "
                    "pip install -e '.[dev]'")

from compaction_kit import CanaryType, build_generated_session, run_conformance

from bench.kit_adapter import (
    ROUNDS,
    FoldTrace,
    KitSession,
    LongrunCompactor,
    as_text,
    budget_of,
    fold_longrun,
    offline_policy,
    planted,
    score,
    slices,
    to_messages,
)
from bench.retention.methods import cli_args
from longrun.cli import compact_cmd
from longrun.models.blocks import Message


@pytest.fixture(scope="module")
def small() -> KitSession:
    """The kit's smallest kind of session: generated, 10 canaries, 3 of them updated."""
    return KitSession("generated-1", "generated", *build_generated_session(1))


def test_the_kits_probe_keeps_the_raw_transcript_and_nothing_of_an_empty_text(small: KitSession) -> None:
    kept, stale, updates = score(small.session.full_text(), small.canaries)
    assert kept == dict.fromkeys((c.id for c in small.canaries), True)
    assert updates == 3 and stale == 3, "the raw transcript still holds every superseded value"
    assert score("", small.canaries) == (dict.fromkeys((c.id for c in small.canaries), False), 0, 3)


def test_slices_cover_the_session_in_order_and_never_split_a_pair(small: KitSession) -> None:
    parts = slices(small.session)
    turns = small.session.turns
    assert len(parts) == ROUNDS and parts[0][0] == 0 and parts[-1][1] == len(turns)
    assert all(a < b for a, b in parts) and all(parts[i][1] == parts[i + 1][0] for i in range(ROUNDS - 1))
    assert all(turns[b - 1].role == "assistant" for _, b in parts)


def test_the_adapters_first_round_is_what_longrun_compact_prints(small: KitSession, tmp_path: Path) -> None:
    _, budget = budget_of(small)
    adapter = LongrunCompactor(small.objective, budget)
    ours = adapter.compact(list(small.session.turns)).text
    transcript, state = tmp_path / "t.jsonl", tmp_path / "state.json"
    transcript.write_text("".join(json.dumps(m.to_wire()) + "\n" for m in to_messages(small.session.turns, small.objective)))
    state.write_text(json.dumps({"objective": small.objective}))
    out = compact_cmd.build(cli_args(transcript, state, budget))  # the CLI's own function (test_bench_retention
    # checks it prints what the real `longrun compact` subprocess prints; a subprocess here costs seconds)
    assert ours == as_text([Message.from_wire(m) for m in out["messages"]])
    assert out["report"]["stages_run"][-1] != "trim", "the session is over its budget, so something was compacted"
    assert out["report"]["tokens_sent_estimated"] <= budget


def test_the_kits_re_compaction_loop_reuses_the_projection_and_never_overflows(small: KitSession) -> None:
    _, budget = budget_of(small)
    adapter = LongrunCompactor(small.objective, budget)
    run = run_conformance(small.session, adapter, rounds=ROUNDS, canaries=small.canaries, budget_fraction=0.25)
    assert adapter.crashes == 0
    assert [r.round_num for r in run.rounds] == list(range(1, ROUNDS + 1))
    assert all(r.context.text for r in run.rounds), "every round has a context"
    assert len(adapter._made) >= 1 and run.rounds[-1].context.text in adapter._made, "rounds 2+ re-compact its projection"
    assert set(run.rounds[-1].survival_by_type) == {c.type.value for c in small.canaries}


def test_the_fold_protocol_on_a_small_kit_session(small: KitSession) -> None:
    _, budget = budget_of(small)
    policy, window = offline_policy(budget)
    trace = FoldTrace()
    rounds = fold_longrun(small, budget, trace=trace)
    assert len(rounds) == ROUNDS and trace.crashes == 0
    compacted = [p for p in trace.projections if p is not None]
    assert compacted, "a session four times its budget is compacted at least once"
    assert [p.covers_through_seq for p in compacted] == sorted(p.covers_through_seq for p in compacted)
    assert compacted[-1].summary and "## Fact ledger" in compacted[-1].summary
    for (_, end), r, text in zip(slices(small.session), rounds, trace.texts, strict=True):
        assert 0 < r.tokens <= policy.limit(window), "every request as sent fits the budget"
        assert r.chars == len(text) and text.endswith("</task_state>"), "the state block is in what is scored"
        ids = [c.id for c in planted(small, end)]
        assert set(r.survived) == set(ids), "scored against exactly the canaries planted so far"
        by_type = Counter(c.type for c in planted(small, end))
        assert sum(by_type.values()) == len(r.survived)
        assert 0 <= sum(r.survived.values()) <= len(ids)
    assert set(rounds[-1].survived) == {c.id for c in small.canaries}
    assert {c.type for c in small.canaries} == set(CanaryType), "the last round scores every type"
