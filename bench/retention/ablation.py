"""Which direction of the context pipeline does how much: each switched off alone, on the final
code, against the same report conversations.

    python -m bench.retention.ablation [--seeds 6]

Every variant patches one function of `longrun.context` for the length of its run (this is a
benchmark: the patches say what "without it" means, and they are undone after each variant):

- `no ledger`: the fact ledger keeps nothing (everything it would quote is left out, counted);
- `no supersession`: every line is kept, none replaces an earlier one (no latest-value rule,
  no corrections, no collapse of repeats);
- `age, not information`: over its budget the ledger keeps the newest lines rather than those
  that tell most per token (and no longer keeps replacing lines first);
- `short results referenced`: no result is quoted on its index line; a short one gets a
  reference like any other (its fact lines may still reach the ledger);
- `64-digit references`: index lines and placeholders carry the full hash instead of 12 digits.

What it cannot show: interactions (two directions off at once), and anything the retention
benchmark itself cannot show (see its tables' notes).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from bench.report import Section, Table, pct, progress
from bench.retention.run import SHARES, evaluate, seed_list
from longrun.context import index, ledger, transcript

Variant = Callable[[], AbstractContextManager[None]]


@contextmanager
def _patched(module: Any, name: str, value: Any) -> Iterator[None]:
    old = getattr(module, name)
    setattr(module, name, value)
    try:
        yield
    finally:
        setattr(module, name, old)


def _no_ledger() -> AbstractContextManager[None]:
    def select(entries: list[ledger.Entry], budget: int, left_before: int = 0) -> tuple[int, list[ledger.Entry]]:
        return left_before + len(entries), []

    return _patched(ledger, "select", select)


def _no_supersession() -> AbstractContextManager[None]:
    def fold(previous: Any, new: Any, created: list[ledger.Entry] | None = None, seq_of: Any = None,
             index: Any = None) -> list[ledger.Entry]:
        made = [ledger.Entry(u) for u in new if not u.quoted]
        if created is not None:  # the fact store records what each fold made
            created.extend(made)
        return [*previous, *made]

    return _patched(ledger, "fold", fold)


def _by_age() -> AbstractContextManager[None]:
    def select(entries: list[ledger.Entry], budget: int, left_before: int = 0) -> tuple[int, list[ledger.Entry]]:
        kept: list[ledger.Entry] = []
        used = ledger.estimate_text(ledger.LEDGER_HEADER) + 40
        for e in reversed(entries):
            cost = ledger.entry_cost(e)
            if used + cost > budget:
                break
            kept.append(e)
            used += cost
        kept.reverse()
        return left_before + len(entries) - len(kept), kept

    return _patched(ledger, "select", select)


@contextmanager
def _short_referenced() -> Iterator[None]:
    with _patched(index, "is_short", lambda b: False), _patched(ledger, "is_short", lambda b: False):
        yield


@contextmanager
def _full_hashes() -> Iterator[None]:
    with _patched(index, "REF_HEX", 64), _patched(transcript, "REF_HEX", 64):
        yield


@contextmanager
def _final() -> Iterator[None]:
    yield


VARIANTS: dict[str, Variant] = {
    "all directions (final)": _final,
    "no ledger": _no_ledger,
    "no supersession": _no_supersession,
    "age, not information": _by_age,
    "short results referenced": _short_referenced,
    "64-digit references": _full_hashes,
}


def run(seeds: int = 6) -> Section:
    """One table: kept % and superseded-as-current per variant, shape and share (extractive)."""
    section = Section("retention_ablation", reproduce=f"python -m bench.retention.ablation --seeds {seeds}")
    cols = ["variant"] + [f"{shape} @ {pct(share, 0)}" for shape in ("sparse", "dense") for share in SHARES]
    table = Table("Fact retention with one direction switched off (extractive, report seeds): kept % (superseded as current)",
                  cols)
    for name, variant in VARIANTS.items():
        progress(f"ablation: {name}")
        with variant():
            cells = evaluate(("sparse", "dense"), SHARES, ("extractive",), seed_list(seeds))
        row = [name]
        for shape in ("sparse", "dense"):
            for share in SHARES:
                c = cells[(shape, share, "extractive")]
                row.append(f"{pct(c.kept())} ({c.superseded()})")
        table.add(*row)
    table.notes += [
        "Each row switches one direction off on the final code (bench/retention/ablation.py says how); the first row is "
        "the pipeline as shipped. The difference to the first row is what that direction is worth on these conversations.",
        "Superseded as current: a correction's old value on the last line that pairs it with its subject (target 0).",
    ]
    section.tables.append(table)
    return section


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.retention.ablation", description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=6, help="conversations per shape (report seeds)")
    args = parser.parse_args(argv)
    section = run(args.seeds)
    for t in section.tables:
        print(t.text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
