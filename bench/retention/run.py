"""`run() -> Section`: the retention benchmark for `bench.run`, and the loop the CLI shares.

Why two seed ranges: figures reported in BENCHMARKS.md must come from conversations nobody tuned
on. `--dev` seeds (9001, 9002, ...) are for iterating on the pipeline and looking at dumps; the
report seeds (5001, 5002, ...) are what `bench.run` and the CLI print by default.

Per shape x share x method it prints kept % (overall, with the per-conversation range, and per
category), superseded values presented as current, constraints verbatim, orphaned tool blocks,
projection tokens against the budget and where the summary came from; then the issue's targets
with met/MISSED for this run, and what the benchmark cannot show.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from bench.report import Section, Table, mark, pct, progress
from bench.retention import methods as m
from bench.retention.generate import SHAPES, Conversation, conversation
from bench.retention.probe import CATEGORIES, LABELS
from bench.retention.score import Score, lines, score, texts

SHARES = (0.25, 0.66)
DEFAULT_SEEDS = 6
REPORT_SEED_BASE, DEV_SEED_BASE = 5_000, 9_000
TARGETS = {("sparse", 0.25): 0.98, ("dense", 0.66): 0.80}
COMPACTORS = ("extractive", "model", "folded")


def seed_list(n: int, dev: bool = False) -> list[int]:
    base = DEV_SEED_BASE if dev else REPORT_SEED_BASE
    return [base + i + 1 for i in range(n)]


@dataclass
class Cell:
    """One shape x share x method over all its conversations."""

    scores: list[Score] = field(default_factory=list)
    sources: Counter[str] = field(default_factory=Counter)
    rejected: int = 0
    seconds: float = 0.0

    def kept(self) -> float:
        return sum(s.kept_all for s in self.scores) / max(1, sum(s.total_all for s in self.scores))

    def kept_in(self, category: str) -> float:
        return sum(s.kept[category] for s in self.scores) / max(1, sum(s.total[category] for s in self.scores))

    def superseded(self) -> int:
        return sum(len(s.superseded) for s in self.scores)

    def constraints(self) -> tuple[int, int]:
        return sum(s.constraints_kept for s in self.scores), sum(s.constraints_total for s in self.scores)

    def orphans(self) -> int:
        return sum(s.orphans for s in self.scores)

    def over_budget(self) -> int:
        return sum(1 for s in self.scores if s.tokens > s.budget)


Key = tuple[str, float, str]


def evaluate(shapes: Sequence[str], shares: Sequence[float], methods: Sequence[str], seeds: Sequence[int],
             dump: Path | None = None) -> dict[Key, Cell]:
    """Every (shape, share, method) cell; `none` is stored under share 1.0."""
    cells: dict[Key, Cell] = {}
    with ExitStack() as stack:
        summarizer = stack.enter_context(m.fake_model_summarizer()) if "model" in methods else None
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="retention-")))
        for shape in shapes:
            for seed in seeds:
                t0 = time.perf_counter()
                conv = conversation(seed, shape)
                where = (dump or tmp) / f"{shape}-{seed}"
                transcript, state = m.write_inputs(conv, where)
                if dump:
                    (where / "probes.json").write_text(json.dumps([p.as_dict() for p in conv.probes], indent=1))
                for share, method in _plan(shares, methods):
                    budget = int(conv.tokens * share)
                    t1 = time.perf_counter()
                    if method == "none":
                        out = m.none(conv)
                    elif method == "naive":
                        out = m.naive(conv, transcript, state, budget)
                    elif method == "extractive":
                        out = m.extractive(transcript, state, budget)
                    elif method == "folded":
                        out = m.folded(transcript, state, budget)
                    else:
                        assert summarizer is not None
                        out = m.model(transcript, state, budget, summarizer)
                    cell = cells.setdefault((shape, share, method), Cell())
                    cell.seconds += time.perf_counter() - t1
                    s = score(out.messages, conv.probes, conv.constraints, tokens=out.tokens,
                              budget=budget if method != "none" else out.tokens)
                    cell.scores.append(s)
                    cell.sources[out.summary_source] += 1
                    cell.rejected += out.rejected is not None
                    if dump:
                        _dump(where, conv, method, share, out.messages, s)
                progress(f"retention: {shape} seed {seed}: {conv.tokens} tokens, {time.perf_counter() - t0:.1f} s")
    return cells


def _plan(shares: Sequence[float], methods: Sequence[str]) -> Iterator[tuple[float, str]]:
    if "none" in methods:
        yield 1.0, "none"
    for share in shares:
        for method in methods:
            if method != "none":
                yield share, method


def _dump(where: Path, conv: Conversation, method: str, share: float, messages: list[dict[str, object]], s: Score) -> None:
    """The projection's scored text and what it missed (with the original statement)."""
    stem = f"{method}-{share:.2f}"
    if method != "none":
        (where / f"{stem}.projection.txt").write_text("\n".join(lines(texts(messages))) + "\n", encoding="utf-8")
    missed = [{"category": p.category, "subject": p.subject, "answer": p.answer, "statement": p.statement,
               "speaker": p.speaker, "position": round(p.position, 3), "question": p.question,
               "answer_elsewhere_in_projection": p.subject in s.answer_elsewhere} for p in s.missed]
    superseded = [{"subject": p.subject, "answer": p.answer, "superseded": list(p.superseded), "final_statement": p.statement,
                   "last_line_in_projection": line} for p, line in zip(s.superseded, s.superseded_lines, strict=True)]
    (where / f"{stem}.missed.json").write_text(json.dumps({"missed": missed, "superseded_as_current": superseded},
                                                          indent=1, ensure_ascii=False), encoding="utf-8")


COLUMNS = ["share", "method", "kept (range per conv.)", *(LABELS[c] for c in CATEGORIES), "superseded as current",
           "constraints verbatim", "orphans", "tokens / budget (max)", "summary"]


def shape_table(shape: str, cells: dict[Key, Cell], shares: Sequence[float], methods: Sequence[str],
                seeds: Sequence[int]) -> Table:
    t = Table(f"Fact retention, {shape} shape: {len(seeds)} conversations x 75 probes (seeds {seeds[0]}-{seeds[-1]})",
              list(COLUMNS))
    for share, method in _plan(shares, methods):
        c = cells[(shape, share, method)]
        per = [s.kept_all / s.total_all for s in c.scores]
        k, n = c.constraints()
        worst = max(s.tokens / s.budget for s in c.scores)
        over = c.over_budget()
        budget = "whole transcript" if method == "none" else f"{worst:.0%}" + (f" ({over} over)" if over else "")
        summary = ", ".join(f"{src} {cnt}" for src, cnt in sorted(c.sources.items()))
        t.add("-" if method == "none" else f"{share:.0%}", method, f"{pct(c.kept())} ({min(per):.0%}-{max(per):.0%})",
              *(pct(c.kept_in(cat)) for cat in CATEGORIES), c.superseded(), f"{k}/{n}", c.orphans(), budget,
              summary + (f"; {c.rejected} rejected" if c.rejected else ""))
    t.notes += [
        "kept: the probe's subject and its exact answer are on one line of the projection as sent (text blocks, "
        "tool inputs as JSON, tool results; lines over 400 characters split into sentences); 15 probes per category.",
        "superseded as current: a correction's last line pairing the subject with the final or an old value shows "
        "an old value without a marker (was, previously, not, obsolete, ...); out of 15 corrections per conversation.",
        "none: the transcript itself (the control; anything under 100% is a generator or scorer bug). naive: the "
        "newest whole messages that fit the budget plus the state block (the floor). extractive: `longrun compact "
        "--budget` as is. model: the same pipeline with ModelSummarizer on the real Anthropic adapter against a local "
        "fake server whose summary policy is a deterministic stand-in (bench/retention/fake_model.py), not an LLM.",
        "budget = share x the transcript's tokens (`estimate_messages`, the unit of `--budget`); tokens are the "
        "projection's `tokens_sent_estimated` (for naive, `estimate_request` of what it sends).",
        "folded: the extractive pipeline over the conversation in 5 slices, each folded into the previous projection "
        "with the fact store carried, as a run's compactions fold it.",
    ]
    if shape == "decisions":
        t.notes.append("decisions: the corrections are overridden decisions and rejected plans (a plan then rejected, "
                       "a decision reverted, options with one picked then replaced, ADR records, a decision-log table, "
                       "an agreement then a change of plan); kept = the plan in force beside its service; superseded as "
                       "current = the replaced plan on the last line about it without a marker (rejected, reverted, ...).")
    return t


def targets_table(cells: dict[Key, Cell], shapes: Sequence[str], shares: Sequence[float],
                  methods: Sequence[str]) -> Table:
    t = Table("Fact retention: targets (from the issue) in this run", ["target", "method", "measured", "status"])
    compactors = [x for x in methods if x in COMPACTORS]
    for (shape, share), goal in TARGETS.items():
        for method in compactors:
            if (shape, share, method) in cells:
                got = cells[(shape, share, method)].kept()
                t.add(f"{shape} @ {share:.0%}: kept >= {goal:.0%}", method, pct(got), mark(got >= goal))
    for method in compactors:
        mine = [c for (sh, _, me), c in cells.items() if me == method and sh in shapes]
        if not mine:
            continue
        sup = sum(c.superseded() for c in mine)
        k, n = sum(c.constraints()[0] for c in mine), sum(c.constraints()[1] for c in mine)
        orph = sum(c.orphans() for c in mine)
        over = sum(c.over_budget() for c in mine)
        t.add("superseded presented as current = 0", method, sup, mark(sup == 0))
        t.add("constraints verbatim = 100%", method, f"{k}/{n}", mark(k == n))
        t.add("orphaned tool blocks = 0", method, orph, mark(orph == 0))
        t.add("every projection within its budget", method, f"{over} over", mark(over == 0))
    controls = [c for (sh, _, me), c in cells.items() if me == "none"]
    if controls:
        got = sum(c.kept() for c in controls) / len(controls)
        t.add("control (no compaction) keeps 100% (sanity)", "none", pct(got), mark(got == 1.0))
    t.notes += [
        "What this cannot show: the conversations are generated by us from finite templates and word lists "
        "(at least 6 phrasings per category, names and values per seed), so a method can still overfit their "
        "shapes; answers are checked by string presence beside the subject on one line, not by a model answering "
        "the question; a paraphrased but correct fact counts as lost, a kept line a reader would misread counts as kept "
        "(superseded values are caught only for corrections, by the marker-word rule); the model mode measures "
        "the pipeline around a summary of model size, not Claude's summary; token counts are longrun's estimate, not "
        "a provider's tokenizer; the folds (method folded) are five, over one conversation, not a long run's hundreds.",
        f"Shares {', '.join(f'{x:.0%}' for x in shares)} of each transcript's estimated tokens; the held-out "
        "benchmark's conversations, phrasings and sizes are not these, so figures here are a proxy, not its result.",
    ]
    return t


def run(seeds: int = DEFAULT_SEEDS, shapes: Sequence[str] = SHAPES, shares: Sequence[float] = SHARES,
        methods: Sequence[str] = m.METHODS, dev: bool = False, dump: Path | None = None) -> Section:
    t0 = time.perf_counter()
    chosen = seed_list(seeds, dev)
    cells = evaluate(shapes, shares, methods, chosen, dump)
    section = Section("retention", reproduce=".venv/bin/python -m bench.run --only retention")
    section.tables = [shape_table(s, cells, shares, methods, chosen) for s in shapes]
    section.tables.append(targets_table(cells, shapes, shares, methods))
    section.seconds = time.perf_counter() - t0
    return section
