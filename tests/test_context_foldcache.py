"""The fold index kept across compactions (`longrun.context.foldcache`, issue 25's extraction
cost): a compaction indexes the rows it adds, not every current row of the store again, gives the
rows a store indexed from scratch gives, and keeps a bounded number of indexes (issue 26)."""

from __future__ import annotations

from typing import Any

import pytest

from longrun.context import extract, foldcache, foldindex
from longrun.context.factstore import FactStore
from longrun.models import Message, TaskState, TranscriptItem
from longrun.models.context import FactRow

STATE = TaskState(run_id="r", state_version=1, objective="Keep the service facts.")


def turns(n: int) -> list[str]:
    """Service facts, each service's port said again later with another value, a correction, a
    rule, a rename and a note-like repeat: rows that replace rows of earlier compactions."""
    out = []
    for i in range(n):
        out.append(f"svc-{i} listens on port {8000 + i}.")
        out.append(f"Host node{i} runs in rack R{i} of region eu-west-{i % 3}.")
        out.append(f"Actually svc-{max(i - 3, 0)} port is {9000 + i}, not {8000 + i - 3}.")
        out.append(f"The deadline for milestone M{i % 4} is 2027-0{1 + i % 9}-1{i % 10}.")
        out.append(f"Build {i} finished in {30 + i}s on runner r{i % 3}.")
        if i % 5 == 0:
            out.append("Never restart the primary database during business hours.")
        if i % 6 == 0:
            out.append(f"We are calling the project PROJ-{i} now.")
    return out


def items_of(texts: list[str]) -> list[TranscriptItem]:
    out: list[TranscriptItem] = []
    for t in texts:
        for m in (Message.user_text(t), Message(role="assistant", content=[{"type": "text", "text": "Noted."}])):
            out.append(TranscriptItem(seq=len(out) + 1, message=m))
    return out


def compactions(items: list[TranscriptItem], n: int, cold: bool) -> list[FactRow]:
    """The rows `n` compactions over the growing transcript leave, each in a store rebuilt from the
    rows so far (as `compact()` builds it); `cold`: no index kept between them."""
    rows: list[FactRow] = []
    step = len(items) // n
    for k in range(1, n + 1):
        through = items[-1].seq if k == n else items[k * step - 1].seq
        if cold:
            foldcache.cache_clear()
        store = FactStore(rows)
        store.extend(extract.units_after(store, items, through, STATE))
        rows = store.rows
    return rows


@pytest.fixture
def adds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many lines each fold index indexed (`Earlier.add` counted, then called as it is)."""
    counted = [0]
    real = foldindex.Earlier.add

    def add(self: foldindex.Earlier, e: Any) -> None:
        counted[0] += 1
        real(self, e)

    monkeypatch.setattr(foldindex.Earlier, "add", add)
    return counted


def test_a_compaction_indexes_the_rows_it_adds_not_the_whole_store_again(adds: list[int]) -> None:
    foldcache.cache_clear()
    items = items_of(turns(60))
    rows = compactions(items[:400], 4, cold=False)
    before = adds[0]
    store = FactStore(rows)
    current = len(store.current())
    added = store.extend(extract.units_after(store, items, items[409].seq, STATE))  # a few more turns
    assert current > 60 and 0 < len(added) < 20
    # the fold indexes the new units, and the kept index takes the rows they add: nothing of the
    # `current` rows the store already held is indexed again
    assert adds[0] - before <= 2 * len(added), (adds[0] - before, len(added), current)


def test_the_kept_index_gives_the_rows_a_store_indexed_from_scratch_gives() -> None:
    items = items_of(turns(80))
    foldcache.cache_clear()
    warm = compactions(items, 9, cold=False)
    cold = compactions(items, 9, cold=True)
    assert any(r.supersedes for r in warm)
    assert [r.model_dump() for r in warm] == [r.model_dump() for r in cold]


def test_a_retried_compaction_from_the_same_rows_gives_the_same_rows() -> None:
    """`compact()` may try a summary on a copy of the store and then extend another copy of the same
    rows: the kept index is not changed by a fold."""
    foldcache.cache_clear()
    items = items_of(turns(40))
    rows = compactions(items[:100], 3, cold=False)
    out = []
    for _ in range(2):
        store = FactStore(rows)
        out.append([r.model_dump() for r in store.extend(extract.units_after(store, items, items[-1].seq, STATE))])
    assert out[0] == out[1] and out[0]


def test_the_kept_indexes_are_bounded() -> None:
    foldcache.cache_clear()
    for run in range(3 * foldcache.MAX_SNAPSHOTS):
        items = items_of([f"run-{run} svc-{i} listens on port {8000 + i}." for i in range(5)])
        compactions(items, 2, cold=False)
    assert 0 < len(foldcache._kept) <= foldcache.MAX_SNAPSHOTS
    assert sum(s.chars for s in foldcache._kept.values()) <= foldcache.MAX_CHARS
