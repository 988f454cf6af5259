"""The fact-retention benchmark (bench/retention): the generator, the scorer and the runner.

These check the benchmark, not the pipeline's quality: conversations are deterministic and in
range, every probe is answerable in the raw transcript, the scorer's rules do what they say on
hand-made projections, the probes are spread out (keeping the newest messages loses most), the
phrasings really vary, and the in-process paths match the real `longrun compact` CLI.
No database, no Temporal.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter, defaultdict
from itertools import pairwise
from pathlib import Path

import pytest

from bench.retention import fake_model
from bench.retention import methods as m
from bench.retention.__main__ import main as retention_main
from bench.retention.generate import MAX_TOKENS, MIN_TOKENS, SHAPES, conversation, measure
from bench.retention.probe import CATEGORIES, Probe, answers
from bench.retention.run import evaluate, run, seed_list
from bench.retention.score import lines, score, superseded_as_current, texts
from longrun.cli import compact_cmd
from longrun.context import estimate_text

LONGRUN = str(Path(sys.executable).parent / "longrun")
SEEDS = (301, 302)  # neither the dev nor the report seeds


@pytest.fixture(scope="module")
def convs() -> dict[tuple[str, int], object]:
    return {(shape, seed): conversation(seed, shape) for shape in SHAPES for seed in SEEDS}


def test_deterministic_per_seed_and_different_across_seeds() -> None:
    a, b = conversation(301, "sparse"), conversation(301, "sparse")
    assert a.messages == b.messages and a.probes == b.probes and a.constraints == b.constraints
    c = conversation(302, "sparse")
    assert a.messages != c.messages
    assert len({p.subject for p in a.probes} & {p.subject for p in c.probes}) < 10, "names come from the seed"
    assert conversation(301, "dense").messages != a.messages


def test_sizes_probes_and_wire_format(convs: dict) -> None:
    for (shape, seed), conv in convs.items():
        assert MIN_TOKENS <= measure(conv.messages) <= MAX_TOKENS, (shape, seed)
        assert conv.tokens == measure(conv.messages)
        assert Counter(p.category for p in conv.probes) == dict.fromkeys(CATEGORIES, 15)
        assert 2 <= len(conv.constraints) <= 4
        roles = [msg["role"] for msg in conv.messages]
        assert roles[0] == "user" and all(x != y for x, y in pairwise(roles)), "roles alternate"


def test_the_raw_transcript_answers_every_probe(convs: dict) -> None:
    for (shape, seed), conv in convs.items():
        s = score(conv.messages, conv.probes, conv.constraints)
        assert s.kept_all == 75, (shape, seed, [(p.subject, p.answer) for p in s.missed])
        assert not s.superseded and s.orphans == 0 and s.constraints_kept == s.constraints_total
        raw = set(lines(texts(conv.messages)))
        for p in conv.probes:
            assert answers(p.statement, p.subject, p.answer), p
            assert p.statement in raw, p
            assert p.answer not in p.superseded


def test_superseded_detection_on_hand_made_projections() -> None:
    p = Probe("correction", "port of billing-svc?", "billing-svc", "8443", ("7001",))

    def proj(*texts_: str) -> list[dict]:
        return [{"role": "user", "content": [{"type": "text", "text": "\n".join(texts_)}]}]

    final_last = proj("billing-svc port: 7001", "Correction: billing-svc port is 8443")
    old_last = proj("Correction: billing-svc port is 8443", "billing-svc port: 7001")
    marked = proj("billing-svc port is 8443", "billing-svc port was 7001")
    assert len(score(final_last, [p], []).superseded) == 0
    assert len(score(old_last, [p], []).superseded) == 1
    assert len(score(marked, [p], []).superseded) == 0
    assert score(old_last, [p], []).kept_all == 1  # kept and presented wrongly are counted apart
    # subjects and answers are whole tokens, case-insensitive
    assert answers("BILLING-SVC => 8443", "billing-svc", "8443")
    assert not answers("billing-svc => 18443", "billing-svc", "8443")
    assert not answers("T-140 done", "T-14", "done")
    # a long line is scored as sentences: a subject and a value sentences apart do not pair
    long = "billing-svc is the first service. " + "Filler words go here. " * 20 + "The port is 8443."
    assert not superseded_as_current(p, lines([long])) and score(proj(long), [p], []).kept_all == 0


def test_orphans_and_constraints_are_counted() -> None:
    use = {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "grep", "input": {}}]}
    res = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "x"}]}
    assert score([use, res], [], []).orphans == 0
    assert score([use], [], []).orphans == 1 and score([res], [], []).orphans == 1
    s = score([{"role": "user", "content": "Never run migrations against db-1 without a ticket."}], [],
              ["Never run migrations against db-1 without a ticket.", "Do not push to main."])
    assert (s.constraints_kept, s.constraints_total) == (1, 2)


def test_probes_are_spread_and_the_newest_messages_lose_most(convs: dict, tmp_path: Path) -> None:
    for (shape, seed), conv in convs.items():
        for cat in CATEGORIES:
            thirds = {min(2, int(p.position * 3)) for p in conv.probes if p.category == cat}
            assert thirds == {0, 1, 2}, (shape, seed, cat)
        t, st = m.write_inputs(conv, tmp_path / f"{shape}-{seed}")
        quarter = score(m.naive(conv, t, st, int(conv.tokens * 0.25)).messages, conv.probes, conv.constraints)
        assert quarter.kept_all <= 0.45 * 75, (shape, seed, quarter.kept_all)
        tail = score(conv.messages[-len(conv.messages) // 4:], conv.probes, conv.constraints)
        assert tail.kept_all <= 0.45 * 75


def test_variety_of_phrasings_speakers_and_noise() -> None:
    templates: dict[str, set[str]] = defaultdict(set)
    speakers: dict[str, set[str]] = defaultdict(set)
    for shape in SHAPES:
        for seed in (303, 304, 305):
            for p in conversation(seed, shape).probes:
                templates[p.category].add(p.template)
                speakers[p.category].add(p.speaker)
    assert all(len(templates[c]) >= 6 for c in CATEGORIES), {c: len(v) for c, v in templates.items()}
    for c in ("relation", "correction", "status"):
        assert speakers[c] == {"user", "assistant", "tool"}, c
    conv = conversation(303, "sparse")
    text = lines(texts(conv.messages))
    acks = Counter(x for x in text if len(x) < 45 and not any(ch.isdigit() for ch in x))
    assert sum(acks.values()) >= 100 and acks.most_common(1)[0][1] >= 8, "near-identical acknowledgements, repeated"
    assert sum(1 for x in text if x.startswith(("(unrelated)", "ignore the old", "obsolete", "FYI, not", "the 2021"))) >= 5


def test_project_mirrors_compact_cmd_build(convs: dict, tmp_path: Path) -> None:
    conv = convs[("dense", SEEDS[0])]
    t, st = m.write_inputs(conv, tmp_path)
    budget = int(conv.tokens * 0.66)
    built = compact_cmd.build(m.cli_args(t, st, budget))
    assert m.project(t, st, budget, None)["messages"] == built["messages"], "model mode must differ only in the summarizer"


def test_real_cli_scores_like_in_process(convs: dict, tmp_path: Path) -> None:
    conv = convs[("sparse", SEEDS[0])]
    t, st = m.write_inputs(conv, tmp_path)
    budget = int(conv.tokens * 0.25)
    done = subprocess.run([LONGRUN, "compact", str(t), "--state", str(st), "--budget", str(budget), "--json"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    cli = json.loads(done.stdout)
    mine = m.extractive(t, st, budget)
    a = score(cli["messages"], conv.probes, conv.constraints)
    b = score(mine.messages, conv.probes, conv.constraints)
    assert a.kept == b.kept and [p.subject for p in a.missed] == [p.subject for p in b.missed]
    assert (len(a.superseded), a.orphans, a.constraints_kept) == (len(b.superseded), b.orphans, b.constraints_kept)
    assert cli["report"]["tokens_sent_estimated"] == mine.tokens


def test_model_mode_goes_through_the_anthropic_adapter(convs: dict, tmp_path: Path) -> None:
    conv = convs[("sparse", SEEDS[1])]
    t, st = m.write_inputs(conv, tmp_path)
    with m.fake_model_summarizer() as summarizer:
        out = m.model(t, st, int(conv.tokens * 0.25), summarizer)
    assert out.rejected is None, out.rejected
    assert out.summary_source in ("model", "none")


def test_fake_model_summary_fits_and_has_the_sections() -> None:
    turns = "\n".join(f"[user] svc-{i} listens on port {4000 + i}. Thanks, noted." for i in range(400))
    text = (f"Objective of the run: ship it\nCurrent step: survey; next action: inspect\n\nTurns to summarize:\n{turns}"
            "\n\nWrite the summary now, in at most 300 tokens")
    out = fake_model.write_summary(text, 300)
    assert estimate_text(out) <= 300
    assert all(f"## {s}" in out for s in ("Goal", "Progress", "Facts", "Decisions", "Next step"))
    assert "svc-399 listens on port 4399." in out and "svc-0 listens" not in out, "newest first when short"
    assert "Thanks, noted." not in out


def test_run_section_and_cli_dump(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert set(seed_list(3)).isdisjoint(seed_list(3, dev=True))
    section = run(seeds=1, shapes=("sparse",), shares=(0.25,), dev=True)
    table, targets = section.tables
    assert [r[1] for r in table.rows] == ["none", "naive", "extractive", "model", "folded"]
    assert table.rows[0][2].startswith("100.0%")
    assert all(r[-1] in ("met", "MISSED") for r in targets.rows)
    cells = evaluate(("dense",), (0.66,), ("extractive",), [seed_list(1, dev=True)[0]], dump=tmp_path)
    assert list(cells) == [("dense", 0.66, "extractive")]
    assert retention_main(["--shape", "sparse", "--share", "0.66", "--seeds", "1", "--method", "naive", "--dev",
                           "--dump", str(tmp_path)]) == 0
    assert "Fact retention, sparse shape" in capsys.readouterr().out
    where = tmp_path / f"sparse-{seed_list(1, dev=True)[0]}"
    for name in ("transcript.jsonl", "state.json", "probes.json", "naive-0.66.projection.txt"):
        assert (where / name).is_file(), name
    missed = json.loads((where / "naive-0.66.missed.json").read_text())
    assert missed["missed"] and {"category", "subject", "answer", "statement"} <= set(missed["missed"][0])


def test_decisions_shape_overrides_plans_in_several_structures(convs: dict) -> None:
    """Its corrections are overridden decisions: the old plan said first, the new one later, in at
    least five structures over a few seeds; the raw transcript answers each and shows none stale."""
    used: set[str] = set()
    for seed in (303, 304, 305):
        conv = conversation(seed, "decisions")
        decided = [p for p in conv.probes if p.category == "correction"]
        assert all(p.template.startswith("dec.") for p in decided)
        used |= {p.template for p in decided}
        raw = lines(texts(conv.messages))
        for p in decided:
            old = [i for i, x in enumerate(raw) if answers(x, p.subject, p.superseded[0])]
            assert old and old[0] < raw.index(p.statement), p  # the replaced plan was said before the new one
    assert len(used) >= 5, used


def test_folded_method_folds_and_stays_within_the_budget(convs: dict, tmp_path: Path) -> None:
    conv = convs[("decisions", SEEDS[0])]
    t, st = m.write_inputs(conv, tmp_path)
    budget = int(conv.tokens * 0.25)
    out = m.folded(t, st, budget)
    s = score(out.messages, conv.probes, conv.constraints, tokens=out.tokens, budget=budget)
    assert out.summary_source == "extractive" and out.tokens <= budget
    assert s.orphans == 0 and s.constraints_kept == s.constraints_total
    assert s.kept_all > score(m.naive(conv, t, st, budget).messages, conv.probes, conv.constraints).kept_all
