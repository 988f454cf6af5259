"""`recall` as a pure function: which of a run's facts hold some words, and how to say each one.

The `recall` tool (longrun/tools/recall.py) answers the model with this; `longrun facts` and the
console use `replacements` to say what replaced a superseded row. Pure: it reads a `FactStore` in
memory, so a caller (a benchmark, a script, the tool) gets the same answer for the same rows.

Current rows come first, then the superseded ones, each marked with the row that replaced it, so
an old value never reads as the current one (issue 25).

Tests: tests/test_tools_recall.py (through the tool), tests/test_context_api.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from longrun.context.factstore import FactStore
from longrun.models.context import FactRow

MAX_HITS = 40
"""Rows shown at most (current first); the rest are counted."""


def replacements(store: FactStore) -> dict[int, int]:
    """Each superseded row's seq → the row that replaced it (the first one to name it)."""
    out: dict[int, int] = {}
    for r in store.rows:
        for s in r.supersedes:
            out.setdefault(s, r.seq)
    return out


def describe(row: FactRow, store: FactStore, replaced_by: dict[int, int]) -> str:
    """One row as recall shows it: value, source seq, speaker, lineage."""
    by_seq = {r.seq: r for r in store.rows}
    head = f"[fact {row.seq}] ({row.kind}, said by {row.source}, transcript seq {row.source_seq}"
    head += f", {row.where})" if row.where else ")"
    parts = [f"{head} {row.text}"]
    if row.value:
        parts.append(f"  value: {row.value}")
    if row.seq in replaced_by:
        newer = by_seq.get(replaced_by[row.seq])
        parts.append(f"  SUPERSEDED by fact {replaced_by[row.seq]}"
                     + (f" (transcript seq {newer.source_seq})" if newer else ""))
    for old in row.supersedes:
        was = by_seq.get(old)
        parts.append(f"  supersedes fact {old}" + (f": {was.text}" if was else ""))
    return "\n".join(parts)


@dataclass(frozen=True)
class Recalled:
    """What a recall found: the matching current rows and superseded rows, newest first."""

    query: str
    kind: str | None
    current: list[FactRow]
    superseded: list[FactRow]
    store: FactStore

    @property
    def found(self) -> bool:
        return bool(self.current or self.superseded)

    def render(self, max_hits: int = MAX_HITS) -> str:
        """The answer the model reads: a count line, then each row (current first), at most
        `max_hits` of them, and how many more there were."""
        rows = self.current + self.superseded
        shown = rows[:max_hits]
        gone = replacements(self.store)
        lines = [f"{len(self.current)} current and {len(self.superseded)} superseded fact(s) match {self.query!r}"
                 + (f" (kind {self.kind})" if self.kind else "") + ":"]
        lines += [describe(r, self.store, gone) for r in shown]
        if len(rows) > len(shown):
            lines.append(f"[{len(rows) - len(shown)} more; narrow the query or give kind]")
        return "\n".join(lines)


def recall(store: FactStore, query: str, *, kind: str | None = None) -> Recalled:
    """The rows of `store` whose subject, value or text hold every word of `query`
    (case-insensitive), of `kind` if given: current and superseded apart, newest first.

    Args:
        store: a run's fact store (`FactStore(rows)`); not modified.
        query: words the fact holds, e.g. "database port"; an empty query matches every row.
        kind: rule, decision, value, status or preference, to narrow the search.

    Returns:
        A `Recalled`; its `render()` is what the `recall` tool answers when something matched.
    """
    rows = store.recall(query, kind=kind, include_superseded=True)
    return Recalled(query=query, kind=kind, current=[r for r in rows if not store.superseded(r)],
                    superseded=[r for r in rows if store.superseded(r)], store=store)
