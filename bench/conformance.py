"""`run() -> Section`: longrun measured by compaction-conformance-kit 0.8.0, a benchmark nobody here
wrote (MIT, `pip install compaction-conformance-kit`, module `compaction_kit`, no model calls).

The kit plants typed canaries (safety rules, hard constraints, facts, goal state, user
preferences) in small sessions and scores a compacted context with its own probe
(`BehaviorProbe`: every required token of the canary, and of its behaviour and exact-use
scenarios, is in the text). Its 17 sessions here: the seeded one, and seeds 1-4 of the
randomized, generated, semantic and semantic held-out builders (252 canaries).

Two protocols, each at a quarter of every session:

- **re-compaction** (`run_conformance`, the kit's own loop): round 1 compacts the session, round
  k+1 compacts round k's output. longrun's round 1 is `longrun compact TRANSCRIPT --state STATE
  --budget B` (`compact_cmd.build`); each later round re-compacts the projection the previous
  round's text came from, forced, as `longrun compact-now` does.
- **fold**: the session arrives in 5 slices; each is appended to the transcript and
  `longrun.context.compact(..., previous=...)` folds the previous projection forward, exactly as a
  run's compaction activity calls it (`activities/model.py`: `should_compact` on the request as
  rendered, then `compact`, a noop leaving the previous projection in place). What is scored is
  the next request as sent (`render_request`, then `fit_request`), state block included, against
  the canaries planted so far.

The kit's deterministic compactors run beside longrun on the same sessions: in the fold, each gets
its previous output as a system turn followed by the new slice. Budgets: the kit's compactors get
the kit's cap, 25% of the session's characters; longrun gets 25% of the session's estimated
tokens, but never less than 1,000, the least `ContextPolicy.budget` accepts (the table says what
share that gives).
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

if importlib.util.find_spec("compaction_kit") is None:
    raise ImportError("the conformance benchmark needs compaction-conformance-kit==0.8.0, in the bench extra: "
                      "pip install -e '.[bench]' (or `make bench`, which installs it)")

from compaction_kit import (  # after the check above, which says how to install it
    ChecklistCompactor,
    LossyTruncationCompactor,
    NaiveSummaryCompactor,
    PinnedRulesCompactor,
    ProgressiveSummaryCompactor,
    SemanticChecklistCompactor,
    SummaryTailCompactor,
    UpdateAwareChecklistCompactor,
    run_conformance,
)
from compaction_kit.compactors import Compactor

from bench.kit_adapter import (
    BUDGET_FLOOR,
    ROUNDS,
    SEEDS,
    SHARE,
    TYPE_LABELS,
    TYPES,
    FoldTrace,
    KitSession,
    LongrunCompactor,
    Round,
    budget_of,
    fold_kit,
    fold_longrun,
    offline_policy,
    recompaction,
    run_policy,
    sessions,
)
from bench.report import Section, Table, pct, progress

# --- the report -------------------------------------------------------------------------------------

KIT: dict[str, tuple[Callable[[], Compactor], bool]] = {
    "update-aware-checklist": (UpdateAwareChecklistCompactor, True),
    "semantic-checklist": (SemanticChecklistCompactor, True),
    "checklist-carrying": (ChecklistCompactor, True),
    "pinned-rules": (PinnedRulesCompactor, True),
    "progressive-summary": (ProgressiveSummaryCompactor, False),
    "summary-plus-tail": (SummaryTailCompactor, False),
    "naive-summary": (NaiveSummaryCompactor, False),
    "lossy-truncation": (LossyTruncationCompactor, False),
}
"""The kit's deterministic compactors, and whether each finds canaries by the kit's own type
headers ("SAFETY RULE:", ...; checklist-carrying also matches the seeded canaries' own text)."""

LONGRUN = "longrun"
LONGRUN_RUN_POLICY = "longrun, a run's default policy"


@dataclass
class Method:
    """One compactor over every session: one list of rounds per session, and its crashes."""

    sessions: list[list[Round]] = field(default_factory=list)
    crashes: int = 0
    uncapped: list[dict[str, bool]] = field(default_factory=list)
    """Re-compaction without the kit's character cap, round 5 (how issue 25 quoted the kit's compactors)."""

    def kept(self, k: int, ctype: str | None = None) -> float:
        """Pooled share of the canaries planted by round k that round k kept (of one type, if given)."""
        num = den = 0
        for rounds in self.sessions:
            for cid, ok in rounds[k].survived.items():
                if ctype is None or TYPE_OF[cid] == ctype:
                    num += ok
                    den += 1
        return num / den if den else 0.0

    def stale(self, k: int) -> tuple[int, int]:
        return sum(r[k].stale for r in self.sessions), sum(r[k].updates for r in self.sessions)

    def within(self) -> tuple[int, int]:
        """Rounds whose output fits the kit's character cap, of all rounds."""
        rounds = [x for r in self.sessions for x in r]
        return sum(1 for x in rounds if x.chars <= x.budget_chars), len(rounds)


TYPE_OF: dict[str, str] = {}
"""Canary id -> type, filled by `evaluate` (ids are unique across the kit's builders)."""


@dataclass
class Results:
    recompaction: dict[str, Method]
    fold: dict[str, Method]
    budgets: dict[str, tuple[int, int]]
    chosen: list[KitSession]


def evaluate(chosen: Sequence[KitSession]) -> Results:
    """Both protocols, for longrun and each of the kit's compactors, on `chosen`."""
    res = Results({}, {}, {ks.name: budget_of(ks) for ks in chosen}, list(chosen))
    for ks in chosen:
        TYPE_OF.update({c.id: c.type.value for c in ks.canaries})
        budget = res.budgets[ks.name][1]
        adapter = LongrunCompactor(ks.objective, budget)
        res.recompaction.setdefault(LONGRUN, Method()).sessions.append(recompaction(ks, adapter))
        res.recompaction[LONGRUN].crashes += adapter.crashes
        for name, policy_of in ((LONGRUN, offline_policy), (LONGRUN_RUN_POLICY, run_policy)):
            trace = FoldTrace()
            res.fold.setdefault(name, Method()).sessions.append(fold_longrun(ks, budget, policy_of, trace))
            res.fold[name].crashes += trace.crashes
        for name, (factory, _) in KIT.items():
            res.recompaction.setdefault(name, Method()).sessions.append(recompaction(ks, factory()))
            free = run_conformance(ks.session, factory(), rounds=ROUNDS, canaries=ks.canaries)
            res.recompaction[name].uncapped.append(free.rounds[-1].survived)
            res.fold.setdefault(name, Method()).sessions.append(fold_kit(ks, factory()))
    return res


def _label(name: str) -> str:
    if name in KIT:
        return f"kit: {name}" + (" (reads the kit's headers: upper reference)" if KIT[name][1] else "")
    return name


def protocol_table(title: str, methods: dict[str, Method], uncapped: bool = False) -> Table:
    t = Table(title, ["compactor", *(f"round {k}" for k in range(1, ROUNDS + 1)),
                      *(f"{TYPE_LABELS[c]} (r{ROUNDS})" for c in TYPES), f"stale (r{ROUNDS})",
                      "within the kit's char cap", "ContextOverflow", *([f"r{ROUNDS} without the cap"] if uncapped else [])])
    for name, m in methods.items():
        stale, updates = m.stale(ROUNDS - 1)
        within, rounds = m.within()
        free = [ok for s in m.uncapped for ok in s.values()]
        t.add(_label(name), *(pct(m.kept(k)) for k in range(ROUNDS)), *(pct(m.kept(ROUNDS - 1, c)) for c in TYPES),
              f"{stale}/{updates}", f"{within}/{rounds}", m.crashes if name.startswith(LONGRUN) else "-",
              *([pct(sum(free) / len(free)) if free else "-"] if uncapped else []))
    return t


def best_kit(methods: dict[str, Method]) -> str:
    """The kit compactor that keeps most in the last round."""
    return max(KIT, key=lambda n: methods[n].kept(ROUNDS - 1))


def types_table(res: Results) -> Table:
    t = Table("longrun per canary type and round (kept %)", ["protocol", "type", *(f"round {k}" for k in range(1, ROUNDS + 1))])
    for proto, m in (("re-compaction", res.recompaction[LONGRUN]), ("fold", res.fold[LONGRUN]),
                     ("fold, a run's default policy", res.fold[LONGRUN_RUN_POLICY])):
        for c in [None, *TYPES]:
            t.add(proto, "all" if c is None else TYPE_LABELS[c], *(pct(m.kept(k, c)) for k in range(ROUNDS)))
    return t


def fold_loss_table(res: Results) -> Table:
    """Where the fold's losses come from, by the kit's own scoring alone: a canary lost at the last
    round that an earlier round kept was dropped by a fold; one the same transcript compacted from
    scratch keeps is lost to folding itself (issue 25, cause 4)."""
    t = Table(f"longrun fold: canaries lost at round {ROUNDS}, by type", [
        "type", "canaries", f"lost at round {ROUNDS}", "of which an earlier round kept",
        "of which compaction from scratch keeps"])
    fold, scratch = res.fold[LONGRUN], res.recompaction[LONGRUN]
    for c in [None, *TYPES]:
        n = lost = earlier = from_scratch = 0
        for rounds, again in zip(fold.sessions, scratch.sessions, strict=True):
            for cid, ok in rounds[-1].survived.items():
                if c is not None and TYPE_OF[cid] != c:
                    continue
                n += 1
                if ok:
                    continue
                lost += 1
                earlier += any(r.survived.get(cid) for r in rounds[:-1])
                from_scratch += again[0].survived[cid]
        t.add("all" if c is None else TYPE_LABELS[c], n, lost, earlier, from_scratch)
    return t


def budget_table(res: Results) -> Table:
    t = Table("Budgets per session kind", ["sessions", "n", "canaries", "transcript tokens", "25% of it",
                                           "longrun budget", "share it gives", "kit's char cap",
                                           "longrun chars, fold round 5 (max)"])
    fold = res.fold[LONGRUN]
    kinds: dict[str, list[int]] = {}
    for i, ks in enumerate(res.chosen):
        kinds.setdefault(ks.kind, []).append(i)
    for kind, idx in kinds.items():
        tokens = [res.budgets[res.chosen[i].name][0] for i in idx]
        budgets = [res.budgets[res.chosen[i].name][1] for i in idx]
        caps = [fold.sessions[i][-1].budget_chars for i in idx]
        chars = [fold.sessions[i][-1].chars for i in idx]
        t.add(kind, len(idx), sum(len(res.chosen[i].canaries) for i in idx), _span(tokens),
              _span([round(SHARE * x) for x in tokens]), _span(budgets),
              _span([round(100 * b / x) for b, x in zip(budgets, tokens, strict=True)], "%"), _span(caps), max(chars))
    return t


def _span(values: Sequence[int], unit: str = "") -> str:
    lo, hi = min(values), max(values)
    return f"{lo:,}{unit}" if lo == hi else f"{lo:,}-{hi:,}{unit}"


def targets_table(res: Results) -> Table:
    t = Table("Targets (issue 25) in this run", ["target", "measured", "status"])
    for proto, methods in (("re-compaction", res.recompaction), ("fold", res.fold)):
        m, best = methods[LONGRUN], best_kit(methods)
        worst = min(m.kept(k) for k in range(ROUNDS))
        t.add(f"{proto}: >= 98% in every round", pct(worst) + " (worst round)", _mark(worst >= 0.98))
        low = min(TYPES, key=lambda c: min(m.kept(k, c) for k in range(ROUNDS)))
        lowest = min(m.kept(k, low) for k in range(ROUNDS))
        t.add(f"{proto}: every canary type >= 95%", f"{pct(lowest)} ({TYPE_LABELS[low]})", _mark(lowest >= 0.95))
        ref = methods[best].kept(ROUNDS - 1)
        t.add(f"{proto}: at least the kit's best ({best}) in round {ROUNDS}",
              f"{pct(m.kept(ROUNDS - 1))} vs {pct(ref)}", _mark(m.kept(ROUNDS - 1) >= ref))
        t.add(f"{proto}: no ContextOverflow", str(m.crashes), _mark(m.crashes == 0))
    return t


def _mark(ok: bool) -> str:
    return "met" if ok else "MISSED"


NOTES = [
    "Kept: the kit's own probe (`BehaviorProbe`, as `run_conformance` scores): every required token of the canary, "
    "and of its behaviour and exact-use scenarios, occurs in the context (case-insensitive). Pooled over the canaries "
    "of all sessions; in the fold, over those planted in the slices seen so far.",
    "Text scored for longrun: the request as sent (`render_request`, then `fit_request`), each message as `[role] text`, "
    "the task-state block included; the session's system turn is the run's objective, so it is in the state block.",
    "Stale: canaries whose superseded value (an earlier cap, deadline, codename, ...) is still somewhere in the context, "
    "of those that have one (the kit's supersession measure; a value present with a marker still counts).",
    "ContextOverflow: rounds where `compact` or `fit_request` raised it (issue 25, cause 8); such a round scores an "
    "empty context.",
]
CANNOT_SHOW = (
    "What this cannot show: the kit scores by token containment, not by a model answering: a canary whose words are "
    "all present counts as kept even if a reader would misread it, and one paraphrased correctly counts as lost. "
    "Its sessions are small (4.2k-8.7k characters, 2.1k-4.1k estimated tokens) and every canary is a user message with a "
    "type header, so longrun's floor of 1,000 tokens is 25-47% of a session, and the state block (about 180 tokens) "
    "is a larger share than in real runs. The kit's compactors get the kit's character cap while longrun gets "
    "tokens; the char-cap column says how far apart they are. No tool calls, no assistant facts, no corrections "
    "inside long messages: the held-out sets of issue 25 test those, this does not."
)


def report(res: Results) -> list[Table]:
    recomp = protocol_table(f"Kit re-compaction ({ROUNDS} rounds of `run_conformance`, 25% of each session): kept % "
                            f"of {sum(len(k.canaries) for k in res.chosen)} canaries in {len(res.chosen)} sessions",
                            res.recompaction, uncapped=True)
    recomp.notes = [*NOTES, "Without the cap: the kit's compactors as `run_conformance` runs them by default, no "
                    "budget (how issue 25 quoted them: 98.8% for semantic-checklist, 21.8% for the best that does not "
                    "read the headers); their outputs may then exceed 25% of the session."]
    fold = protocol_table(f"Fold ({ROUNDS} slices, each folded into the previous projection), 25% of each session: "
                          "kept % of the canaries planted so far", res.fold)
    fold.notes = [
        "longrun: `compact(items, previous=...)` after each slice when `should_compact` fires, with the policy "
        "`longrun compact --budget B` builds (trigger at B, aim 90%); the second row, a run's default policy with "
        "`context.budget = B` (trigger 75%, aim 50%). Kit compactors: their previous output as a system turn, then "
        "the new slice.",
        "Issue 25 measured 100 -> 96.9 -> 80.7 -> 71.4 -> 50.8% for the fold and 76.6% from scratch with an adapter "
        "not kept in the repository; the differences here (at most 5 points, round 2) are within what the adapter's "
        "choices move: counting the state block into the session's tokens (a quarter of the request, not of the "
        "transcript) measured 100 -> 96.8 -> 84.3 -> 76.4 -> 53.2% and 76.2% on the same code.",
    ]
    types = types_table(res)
    losses = fold_loss_table(res)
    budgets = budget_table(res)
    budgets.notes = [
        f"longrun's budget: 25% of the transcript's estimated tokens (`estimate_messages`, the unit of `--budget`), "
        f"never under {BUDGET_FLOOR:,} (`ContextPolicy` refuses less): the share it gives is the column before the "
        "kit's cap. The kit's compactors get the kit's cap: 25% of the session's characters.",
    ]
    targets = targets_table(res)
    targets.notes = [CANNOT_SHOW]
    return [recomp, fold, types, losses, budgets, targets]


def run(seeds: Sequence[int] = SEEDS) -> Section:
    t0 = time.perf_counter()
    chosen = sessions(seeds)
    progress(f"conformance: {len(chosen)} kit sessions, {ROUNDS} rounds, longrun + {len(KIT)} kit compactors")
    res = evaluate(chosen)
    return Section("conformance", tables=report(res), seconds=time.perf_counter() - t0,
                   reproduce="python -m bench.run --only conformance")


if __name__ == "__main__":
    for table in run().tables:
        print(table.text(), end="\n\n")
