"""Smoke test of the benchmarks: each module runs on tiny parameters and prints the table rows
`make bench` relies on. Nothing here is timed; the speed targets live in `bench/` only."""

from __future__ import annotations

import pytest

from bench import orchestration, overhead, real_sessions, store, synthetic
from bench.run import markdown


def test_synthetic_prints_every_mode_and_every_target() -> None:
    section = synthetic.run(turns=40, facts=9, scale=0.05)
    main, facts, cpu, targets = section.tables
    assert [r[0] for r in main.rows] == list(synthetic.MODES)
    assert [r[0] for r in facts.rows] == list(synthetic.MODES)
    assert [r[0] for r in cpu.rows] == ["microcompact", "full"]
    assert len(targets.rows) == 7 and all(r[2] in ("met", "MISSED") for r in targets.rows)
    none, full = main.row("none"), main.row("full")
    assert none[1].endswith("(1.00x)") and full[7] == "0/" + full[7].split("/")[1], "with the constraint pinned in the state block, the forbidden action is never attempted"
    assert main.row("full")[8] == "0", "no request may orphan a tool pair"


def test_synthetic_policy_attempts_the_forbidden_action_only_without_the_constraint() -> None:
    scn = synthetic.build_scenario(turns=30, facts=6, scale=0.05)
    driver = synthetic.Driver(scn, "full")
    plan = next(p for p in scn.turns if p.temptation)
    _, calls = driver.answer(plan, "nothing about pushing here")
    assert calls[0].input["argv"] == synthetic.FORBIDDEN_ARGV and driver.r.forbidden == 1
    _, calls = driver.answer(plan, f"constraints: {synthetic.FORBIDDEN}")
    assert calls[0].input["argv"] == synthetic.SAFE_ARGV and driver.r.forbidden == 1


@pytest.mark.skipif(not real_sessions.sessions(), reason="real sessions not found beside the repo")
def test_real_sessions_prints_one_row_per_session() -> None:
    section = real_sessions.run(limit=2)
    estimator, compaction = section.tables
    names = [d.name[:8] for d in real_sessions.sessions()[:2]]
    assert [r[0] for r in estimator.rows] == names and [r[0] for r in compaction.rows] == names
    assert all(r[5] in ("met", "MISSED") for r in estimator.rows)


def test_store_prints_both_writer_counts_and_the_floor(db_url: str) -> None:
    section = store.run(seconds=0.2, writers=(1, 2), url=db_url)
    (table,) = section.tables
    assert [r[0] for r in table.rows] == ["1", "2", "2"]
    assert all(r[4].endswith("/s") and r[5].endswith("x") for r in table.rows)


@pytest.mark.slow
def test_orchestration_runs_both_shapes_and_the_floor() -> None:
    section = orchestration.run(sizes=(1,), turns=1, with_peer=False)
    (table,) = section.tables
    assert [r[1] for r in table.rows[:2]] == list(orchestration.SHAPES[:2])
    assert table.rows[2][1].startswith(orchestration.SHAPES[3])
    assert all(r[0] == "1" and r[3] == "1/1" for r in table.rows)
    fused, stepwise = (float(r[7]) for r in table.rows[:2])
    assert fused < stepwise, "the fused turn runs fewer activities per turn"


def test_overhead_pairs_each_setting_with_the_off_of_its_own_block() -> None:
    assert overhead.schedule(3) == [overhead.SETTINGS, overhead.SETTINGS[::-1], overhead.SETTINGS]

    def rnd(setting: str, p50_ms: float, cpu: float) -> overhead.Round:
        return overhead.Round(setting, [p50_ms / 1000] * 3, cpu=cpu, calls=10, runs=1, failed=0)

    # the load doubles in the second block; each setting over its own block's off leaves what it adds
    rounds = [rnd("off", 100, 1.0), rnd("tracing", 100, 1.0), rnd("metrics", 100, 1.0), rnd("both", 110, 1.2),
              rnd("both", 220, 2.4), rnd("metrics", 200, 2.0), rnd("tracing", 200, 2.0), rnd("off", 200, 2.0)]
    assert overhead.paired(rounds, "both", "p50") == pytest.approx([1.1, 1.1])
    assert overhead.paired(rounds, "tracing", "cpu_per_turn") == pytest.approx([1.0, 1.0])
    _, target = overhead.tables(rounds, 10, 3, 2)
    assert [r[3] for r in target.rows] == ["met", "met", "MISSED"]
    assert target.row("both")[4] == "no (2 of 2)"


@pytest.mark.slow
def test_overhead_runs_four_settings_that_really_export_and_scrape() -> None:
    section = overhead.run(n=2, turns=5, blocks=2, warmup=False)  # 12 model calls a round: one scrape
    main, target = section.tables
    assert [r[0] for r in main.rows] == list(overhead.SETTINGS)
    assert all(r[1] == "4/4" for r in main.rows), main.rows
    exported = {r[0]: tuple(int(x) for x in r[9].split(" / ")) for r in main.rows}
    assert exported["off"] == (0, 0)
    assert exported["tracing"][0] > 0 and exported["tracing"][1] == 0, "tracing rounds export spans and are not scraped"
    assert exported["metrics"] == (0, exported["metrics"][1]) and exported["metrics"][1] > 0
    assert min(exported["both"]) > 0
    assert [r[0] for r in target.rows] == ["tracing", "metrics", "both"]
    assert all(r[3] in ("met", "MISSED") for r in target.rows)


def test_markdown_names_the_command_the_machine_and_a_skipped_section() -> None:
    from bench.report import Section, Table

    t = Table("T", ["a", "b"])
    t.add("x", "1.00x")
    text = markdown([Section("one", [t], reproduce="python -m bench.run --only one"), Section("two", skipped="no binary")],
                    "python -m bench.run", 1.0, {"cores": "2"})
    assert "`python -m bench.run`" in text and "- cores: 2" in text and "| x | 1.00x |" in text
    assert "Skipped: no binary" in text


@pytest.mark.slow
def test_long_run_prints_its_buckets_for_both_shapes() -> None:
    from bench import long_run

    section = long_run.run(turns=100, effect_turns=50)
    reads, _spacing, reads_bytes, reads_history, edits, _edits_spacing, _edits_bytes, _edits_history = section.tables
    assert [r[0] for r in reads.rows] == ["first 50", "1-100", "last 50", "last 50 / first 50"]
    assert "completed" in " ".join(reads.notes) and "completed" in " ".join(edits.notes)
    assert reads.rows[0][3].endswith("of 50") and reads.rows[0][4] != "n/a", "statements are counted"
    assert "projections" in reads_bytes.columns and len(reads_history.rows) >= 3
