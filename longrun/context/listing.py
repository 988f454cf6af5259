"""A run's fact store as a person reads it: each fact, whether it is current or what replaced it,
and whether the last projection showed it to the model or left it out.

One function for every reader (`longrun facts`, the console's run page and its JSON API), so
they never disagree about what was left out.

A compaction shows only the current facts its budget fits (issue 25); the others are kept, one
`recall` away. To say which were left out, each current row's text is looked for in the last
projection (its summary, the fact ledger included, and its messages): a fact is rendered verbatim
(`ledger.Entry.render`), so a row whose text is not there was not shown. Both sides are stored
redacted the same way, so a redacted secret does not make a shown fact look left out. Rows read
after the last projection (none today: a compaction adds rows with its projection) show as `new`.

Tests: tests/test_cli_facts.py, tests/test_console_facts.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from longrun.context.factstore import FactStore
from longrun.context.lookup import replacements
from longrun.models.blocks import TextBlock
from longrun.models.context import FactRow, Projection

Shown = Literal["shown", "left out", "new", "no projection"]


def projection_text(projection: Projection) -> str:
    """Everything the projection shows the model: its summary and its messages' text."""
    parts = [projection.summary or ""]
    parts += [b.text for m in projection.messages for b in m.content if isinstance(b, TextBlock)]
    return "\n".join(parts)


def shown_status(row: FactRow, projection: Projection | None, text: str) -> Shown:
    """`shown`, `left out`, `new` (read after the projection) or `no projection`; `text` is the
    projection's text with whitespace normalised (`" ".join(projection_text(p).split())`)."""
    if projection is None:
        return "no projection"
    if row.source_seq > projection.covers_through_seq:
        return "new"
    return "shown" if " ".join(row.text.split()) in text else "left out"


@dataclass(frozen=True)
class ListedFact:
    """One row with what a reader needs beside it."""

    row: FactRow
    superseded_by: int | None
    last_projection: Shown | None
    """None for a superseded row: only current facts are meant to be shown."""

    @property
    def current(self) -> bool:
        return self.superseded_by is None

    def as_dict(self) -> dict[str, Any]:
        return {**self.row.model_dump(mode="json"), "status": "current" if self.current else "superseded",
                "superseded_by": self.superseded_by, "last_projection": self.last_projection}


@dataclass(frozen=True)
class FactListing:
    """The facts asked for, in the order they were said, and the store's totals."""

    projection_version: int | None
    current: int
    total: int
    facts: list[ListedFact]

    @property
    def left_out(self) -> int:
        """Current facts listed here that the last projection did not show."""
        return sum(1 for f in self.facts if f.last_projection == "left out")


def list_facts(rows: Sequence[FactRow], projection: Projection | None, *, query: str = "", kind: str | None = None,
               include_superseded: bool = False) -> FactListing:
    """The store's rows that hold every word of `query` (of `kind`, if given), current ones only
    unless `include_superseded`, each with what replaced it and whether `projection` (the run's
    latest, or None before the first compaction) showed it.

    Args:
        rows: every row of the run's fact store (`Store.facts(run_id)`).
        projection: the run's latest projection (`Store.latest_projection(run_id)`).
    """
    store = FactStore(rows)
    gone = replacements(store)
    picked = sorted(store.recall(query, kind=kind, include_superseded=include_superseded), key=lambda r: r.seq)
    text = " ".join(projection_text(projection).split()) if projection else ""
    listed = [ListedFact(row=r, superseded_by=gone.get(r.seq) if store.superseded(r) else None,
                         last_projection=None if store.superseded(r) else shown_status(r, projection, text))
              for r in picked]
    return FactListing(projection_version=projection.version if projection else None,
                       current=len(store.current()), total=len(store.rows), facts=listed)
