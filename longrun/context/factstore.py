"""A run's fact store: every fact ever read from its transcript, kept, and what replaced what.

Why a store and not a ledger folded forward (issue 25, cause 4): a ledger that is re-read from the
previous projection loses for good whatever one compaction left out for room, although the
transcript still holds it; after five folds a quarter of what a run was told was gone. Here a fact,
once extracted, is a row that is never dropped or changed; a compaction *selects* what to show
from the current rows under its budget (`ledger.select`, by priority class), so a fact left out now
can be shown at the next compaction, and `recall` finds any of them.

- Extraction is incremental and deterministic: each compaction reads only the transcript entries
  after the store's last one (`through_seq`) up to what it summarizes, and folds their units into
  the current rows with the ledger's rules (`ledger.fold`: same key, correction, restatement).
- Append-only: a row that replaces others names them (`FactRow.supersedes`); a row's status is
  read (`superseded`), never written. So the database role may only SELECT and INSERT, and no
  later compaction, bug or prompt can rewrite what a run was told.
- In memory for the offline `longrun compact` and the benchmarks (`FactStore()`), in PostgreSQL
  for runs (table `facts`, rows saved with the projection that added them).

Tests: tests/test_context_factstore.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from operator import attrgetter

from longrun.context import facts, foldcache, kinds, ledger
from longrun.context.facts import Unit
from longrun.context.ledger import Entry
from longrun.models.context import FactRow

_WORDS = re.compile(r"[\w./@$-]+")
_SEQ = attrgetter("seq")


def subject_key(u: Unit) -> str:
    """What a unit is about, as text: its names and content words (labels and values aside), sorted."""
    return " ".join(sorted(u.names | u.words))


class FactStore:
    """The rows of one run's store, in order, and the queries a compaction and `recall` make.

    A compaction works on a copy (`FactStore(store.rows)`): the caller persists the rows it
    returns (`Projection.new_facts`) only when the projection itself is kept."""

    def __init__(self, rows: Iterable[FactRow] = ()) -> None:
        self.rows: list[FactRow] = sorted(rows, key=_SEQ)
        self._gone: set[int] = {s for r in self.rows for s in r.supersedes}

    @property
    def through_seq(self) -> int:
        """The last transcript entry extracted (notes aside): the next compaction starts after it.
        An entry without facts left no row; it is read again next time and yields none again."""
        return max((r.source_seq for r in self.rows if r.source != "note"), default=0)

    def superseded(self, row: FactRow) -> bool:
        return row.seq in self._gone

    def current(self) -> list[FactRow]:
        """The rows no later row replaced, in the order they were said."""
        return [r for r in self.rows if r.seq not in self._gone]

    def entries(self) -> list[Entry]:
        """The current rows as ledger entries (what `ledger.select` ranks and `ledger.render` shows).
        A row that replaced others ranks at least as high as the best of them (`Entry.rank`): the
        new value of a typed record or a rule is that record's or rule's current value, in whatever
        words it was said."""
        rank: dict[int, tuple[int, int]] = {}
        out = []
        for r in self.rows:
            u = facts.analyse(r.text, r.source, where=r.where, order=r.seq)
            rank[r.seq] = min([kinds.rank(u.kind, u.typed), *(rank[s] for s in r.supersedes if s in rank)])
            if r.seq in self._gone:
                continue
            u.count = r.count
            u.quoted = r.quoted
            e = Entry(u, final=r.final, replaced=bool(r.supersedes))
            e.row, e.source_seq, e.rank = r.seq, r.source_seq, rank[r.seq]
            out.append(e)
        return out

    def replaced_values(self, source: str) -> set[str]:
        """The texts of `source`'s rows that a later row replaced with another value (or corrected
        or overrode in other words: a rejected plan holds no value), and that no current row
        repeats: quoted, they would read as current."""
        value = {r.seq: r.value for r in self.rows}
        old = {value_row.text for r in self.rows for s in r.supersedes
               if (value_row := self._by_seq(s)) is not None and value_row.source == source
               and (value[s] != r.value or (r.final and value_row.text != r.text))}
        return old - {r.text for r in self.current() if r.source == source}

    def _by_seq(self, seq: int) -> FactRow | None:
        i = seq - self.rows[0].seq if self.rows else -1
        if 0 <= i < len(self.rows) and self.rows[i].seq == seq:
            return self.rows[i]
        return next((r for r in self.rows if r.seq == seq), None)

    def notes(self) -> set[str]:
        return {r.text for r in self.rows if r.source == "note"}

    def extend(self, units: Sequence[tuple[Unit, int]]) -> list[FactRow]:
        """Fold `units` (each with the transcript entry it came from; 0 for a note) into the
        store, and return the rows added: one per unit, those a later unit of the same batch
        replaced included, each naming what it replaced."""
        if not units:
            return []
        created: list[Entry] = []
        key, kept = foldcache.snapshot(self.rows, self._gone)
        ledger.fold((), [u for u, _ in units], created, {id(u): s for u, s in units}, index=kept.earlier.copy())
        nxt = (self.rows[-1].seq if self.rows else 0) + 1
        for e in created:
            e.row, nxt = nxt, nxt + 1
        added = []
        for e in created:
            u = e.unit
            assert e.row is not None
            added.append(FactRow(
                seq=e.row, source_seq=e.source_seq, kind=u.kind, source=u.source,
                subject=subject_key(u), value=", ".join(sorted(facts.held_values(u))), text=u.text, where=u.where,
                count=u.count, final=e.final, rejected=u.rejected, quoted=u.quoted,
                supersedes=sorted(g.row for g in e.gone if g.row is not None),
            ))
        self.rows += added
        self._gone.update(s for r in added for s in r.supersedes)
        foldcache.advance(key, kept, added)
        return added

    def recall(self, query: str, *, kind: str | None = None, include_superseded: bool = False) -> list[FactRow]:
        """The rows whose subject, value or text hold every word of `query` (case-insensitive),
        current ones only unless asked; newest first. What `recall` and `longrun facts` read."""
        want = [w.lower() for w in _WORDS.findall(query)]
        out = []
        for r in reversed(self.rows):
            if (kind and r.kind != kind) or (not include_superseded and self.superseded(r)):
                continue
            hay = f"{r.subject} {r.value} {r.text}".lower()
            if all(w in hay for w in want):
                out.append(r)
        return out
