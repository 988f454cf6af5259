"""A fact store's fold index, kept across compactions instead of rebuilt at each one.

Why: a compaction folds its new units into every current row of the run's store, and it used to
rebuild that index from the rows each time (`FactStore(rows)`, analysing and indexing every
current row again): its cost grew with the store, not with what the compaction read, and was
most of extraction's cost per 100k tokens on real sessions (issue 25's goal: 100 ms).

Here the index of a store's current rows (`Snapshot`) is kept, keyed by the rows' content (what
`FactStore.entries` reads of them), and advanced by the rows a compaction adds: the rows they
replace are dropped from it (`Earlier.drop`, as if never added) and theirs added, so it is the
index a rebuild gives, line for line (tests/test_context_extraction_snapshot.py). A fold works on
a copy. A store whose rows no snapshot matches (another worker's, a fresh process) is indexed from
its rows, as before.

Bounded (issue 26): at most `MAX_SNAPSHOTS` snapshots and `MAX_CHARS` characters of row texts,
the least recently used go first; a store larger than a quarter of that is not kept.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from operator import attrgetter
from typing import TypeVar

from longrun.context import facts, kinds
from longrun.context.foldindex import Earlier, Shared, append_to, record
from longrun.context.ledger import Entry
from longrun.models.context import FactRow

K = TypeVar("K")

MAX_SNAPSHOTS = 8
MAX_CHARS = 4_000_000

_READ = attrgetter("seq", "source_seq", "text", "source", "where", "count", "final", "quoted")


class RowKey:
    """What `FactStore.entries` reads of each row, in order (equal keys, equal indexes), hashed
    once: a tuple does not keep its hash, and a compaction looks its store's key up, keeps it and
    moves it in the cache, each a hash of every row's fields (issue 25's cost goal)."""

    __slots__ = ("_hash", "rows")

    def __init__(self, rows: tuple[tuple[tuple[int, int, str, str, str, int, bool, bool], tuple[int, ...]], ...]) -> None:
        self.rows = rows
        self._hash = hash(rows)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RowKey) and self._hash == other._hash and self.rows == other.rows

    def __add__(self, more: RowKey) -> RowKey:
        return RowKey(self.rows + more.rows)


def row_key(rows: Sequence[FactRow]) -> RowKey:
    """The content key of `rows` (`RowKey`)."""
    return RowKey(tuple((_READ(r), tuple(r.supersedes)) for r in rows))


class Snapshot:
    """The fold index of a store's current rows (`Earlier`, lines in row order), each line's row,
    the rank of every row (`FactStore.entries`), and per key and topic the lines with it (for
    `Earlier.drop`). Never changed once kept: a fold and an advance work on copies."""

    def __init__(self) -> None:
        self.earlier = Earlier()
        self.line_of: dict[int, int] = {}
        """Row seq -> its line, for the current rows."""
        self.rank: dict[int, tuple[int, int]] = {}
        self.by_key: Shared[tuple[str, frozenset[str]], list[int]] = Shared()
        self.by_topic: Shared[frozenset[str], list[int]] = Shared()
        self.chars = 0

    def copy(self) -> Snapshot:
        out = Snapshot()
        out.earlier = self.earlier.copy()
        out.line_of = dict(self.line_of)
        out.rank = dict(self.rank)
        out.by_key = self.by_key.fork()
        out.by_topic = self.by_topic.fork()
        out.chars = self.chars
        return out

    def add_rows(self, rows: Sequence[FactRow], gone: set[int]) -> None:
        """Rank `rows` (newer than every row so far) and index those `gone` does not list, as
        `FactStore.entries` makes their entries."""
        for r in rows:
            u = facts.analyse(r.text, r.source, where=r.where, order=r.seq)
            self.rank[r.seq] = min([kinds.rank(u.kind, u.typed), *(self.rank[s] for s in r.supersedes if s in self.rank)])
            self.chars += len(r.text) + 1
            if r.seq in gone:
                continue
            u.count = r.count
            u.quoted = r.quoted
            e = Entry(u, final=r.final, replaced=bool(r.supersedes))
            e.row, e.source_seq, e.rank = r.seq, r.source_seq, self.rank[r.seq]
            i = len(self.earlier.entries)
            self.earlier.add(e)
            self.line_of[r.seq] = i
            words, topic, _, _ = record(u)
            append_to(self.by_key, ((u.where, words),), i)
            if topic is not None and u.source != "note":
                append_to(self.by_topic, (topic,), i)

    def drop_rows(self, seqs: Sequence[int]) -> None:
        """Take the current rows `seqs` out, as if never indexed."""
        for seq in seqs:
            i = self.line_of.pop(seq, None)
            if i is None:
                continue
            e = self.earlier.entries[i]
            assert e is not None
            words, topic, _, _ = record(e.unit)
            key_before = _without(self.by_key, (e.unit.where, words), i)
            topic_before = _without(self.by_topic, topic, i) if topic is not None and e.unit.source != "note" else None
            self.earlier.drop(i, key_before, topic_before)


def _without(lines_of: Shared[K, list[int]], key: K, i: int) -> int | None:
    """Take line `i` off `key`'s lines; the latest line left, or None."""
    lines = lines_of.get(key, [])
    if i in lines:
        lines = lines_of.writable(key, list)
        lines.remove(i)
    if not lines:
        lines_of.pop(key, None)
        return None
    return lines[-1]


_kept: OrderedDict[RowKey, Snapshot] = OrderedDict()
_lock = threading.Lock()


def snapshot(rows: Sequence[FactRow], gone: set[int]) -> tuple[RowKey, Snapshot]:
    """The index of `rows`' current ones (`gone`: the replaced rows): kept, or built from the rows."""
    key = row_key(rows)
    with _lock:
        snap = _kept.get(key)
        if snap is not None:
            _kept.move_to_end(key)
            return key, snap
    snap = Snapshot()
    snap.add_rows(rows, gone)
    _keep(key, snap)
    return key, snap


def advance(key: RowKey, snap: Snapshot, added: Sequence[FactRow]) -> None:
    """Keep the index of the store `key` and `added` make (rows newer than all of `key`'s)."""
    if not added:
        return
    nxt = snap.copy()
    replaced = [s for r in added for s in r.supersedes]
    nxt.drop_rows(replaced)
    nxt.add_rows(added, set(replaced))
    _keep(key + row_key(added), nxt)


def _keep(key: RowKey, snap: Snapshot) -> None:
    if snap.chars * 4 > MAX_CHARS:
        return
    with _lock:
        _kept[key] = snap
        _kept.move_to_end(key)
        while len(_kept) > MAX_SNAPSHOTS or sum(s.chars for s in _kept.values()) > MAX_CHARS:
            _kept.popitem(last=False)


def cache_clear() -> None:
    """Forget every snapshot (the benchmarks measure from a cold worker)."""
    with _lock:
        _kept.clear()
