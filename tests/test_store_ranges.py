"""Bounded transcript reads (issue 26): the request's read reaches back only as far as a request
can hold, in one statement, on a real PostgreSQL."""

from __future__ import annotations

import pytest

from longrun.errors import RunNotFoundError
from longrun.models import Message, RunSpec
from longrun.store import Store
from longrun.store.core import InvalidInputError


def _run(store: Store, estimates: list[int]) -> None:
    store.create_run("r", RunSpec(objective="read ranges", workspace="/tmp"))
    for i, t in enumerate(estimates):
        assert store.append_transcript("r", Message.user_text(f"entry {i + 1}"), token_estimate=t) == i + 1


def test_the_tail_reaches_back_to_its_tokens_and_one_entry_more(store: Store) -> None:
    _run(store, [100] * 20)
    # entries 20..18 reach the 250 (and the 300) asked for; 17 is the one more
    assert [e.seq for e in store.transcript_tail("r", tokens=250)] == [17, 18, 19, 20]
    assert [e.seq for e in store.transcript_tail("r", tokens=300)] == [17, 18, 19, 20]
    assert [e.seq for e in store.transcript_tail("r", tokens=301)] == [16, 17, 18, 19, 20]
    assert [e.seq for e in store.transcript_tail("r", after_seq=18, tokens=10_000)] == [19, 20], \
        "never before after_seq"
    assert [e.seq for e in store.transcript_tail("r", after_seq=5, tokens=10_000)] == list(range(6, 21)), \
        "a stretch under the tokens is read whole, as `transcript` reads it"
    assert store.transcript_tail("r", tokens=0)[-1].seq == 20 and len(store.transcript_tail("r", tokens=0)) == 1
    tail = store.transcript_tail("r", tokens=250)
    assert [e.message for e in tail] == [e.message for e in store.transcript("r", after_seq=16)]


def test_the_tail_of_an_empty_range_an_unknown_run_and_bad_bounds(store: Store) -> None:
    _run(store, [5, 5])
    assert store.transcript_tail("r", after_seq=2, tokens=100) == []
    with pytest.raises(RunNotFoundError):
        store.transcript_tail("nope", tokens=100)
    with pytest.raises(InvalidInputError, match="tokens"):
        store.transcript_tail("r", tokens=-1)


def test_after_a_long_stretch_the_request_read_is_bounded_by_the_budget(store: Store) -> None:
    _run(store, [1_000] * 300)
    rows = store.transcript_tail("r", tokens=32_000)
    assert len(rows) == 33 and rows[-1].seq == 300, "32 entries reach 32,000 tokens, and one more: not 300"
