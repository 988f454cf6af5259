"""Compare-and-set under real contention: 16 writers x 100 increments on one run lose nothing,
while a naive read-modify-write on the same server, run the same way, loses updates."""

from __future__ import annotations

import random
import time
from collections import Counter

import pytest
from sqlalchemy import text

from longrun.errors import StaleStateError
from longrun.models import Message, RunSpec, TaskState
from longrun.models.audit import ToolRan
from longrun.store import Store
from tests.support.threads import run_threads

WRITERS = 16
INCREMENTS = 100


def _counter(state: TaskState) -> int:
    """The counter the writers increment, kept in the state itself (absent = 0)."""
    return int(state.notes[0]) if state.notes else 0


@pytest.mark.slow  # 20-30 s on a 2-core machine: 16 threads fight over one row on purpose
def test_cas_loses_no_update_where_naive_read_modify_write_does(store: Store) -> None:
    store.create_run("hot", RunSpec(objective="count", workspace="/tmp/ws"))
    stale = Counter[int]()

    def writer(i: int) -> None:
        done = streak = 0
        while done < INCREMENTS:
            head = store.load_state("hot")
            new = head.model_copy(deep=True)
            new.notes = [str(_counter(head) + 1)]  # read the counter, add one, write it back
            try:
                store.compare_and_set("hot", head.state_version, new, actor=f"writer-{i}", reason="increment")
            except StaleStateError:
                stale[i] += 1
                streak += 1
                # what a well-behaved client does after losing: reload after a jittered backoff
                time.sleep(random.uniform(0, 0.001 * 2 ** min(streak, 6)))
                continue
            done += 1
            streak = 0

    assert run_threads(writer, WRITERS) == []

    final = store.load_state("hot")
    assert final.state_version == 1 + WRITERS * INCREMENTS == 1601
    # 0 lost updates: the counter kept in the state saw every one of the 1600 increments
    assert final.notes == [str(WRITERS * INCREMENTS)]
    rejected = sum(stale.values())
    assert rejected > 0, "16 writers on one row must have collided at least once"
    print(f"\nCAS: 1600 increments committed, {rejected} stale writes rejected")

    history = store.state_history("hot")
    assert [h.version for h in history] == list(range(1, 1602))
    assert [_counter(h.state) for h in history] == list(range(0, 1601))
    assert Counter(h.actor for h in history[1:]) == {f"writer-{i}": INCREMENTS for i in range(WRITERS)}
    assert store.verify_chain("hot").ok

    # The control: the same contention on a naive read-modify-write (READ COMMITTED) loses updates.
    with store.engine.begin() as conn:
        conn.execute(text("CREATE TABLE naive_counter (id int PRIMARY KEY, n int NOT NULL)"))
        conn.execute(text("INSERT INTO naive_counter VALUES (1, 0)"))

    def naive(i: int) -> None:
        for _ in range(INCREMENTS):
            with store.engine.begin() as conn:
                n = conn.execute(text("SELECT n FROM naive_counter WHERE id = 1")).scalar_one()
                time.sleep(0.0005)  # widen the race window a little, as real work between read and write does
                conn.execute(text("UPDATE naive_counter SET n = :n WHERE id = 1"), {"n": n + 1})

    assert run_threads(naive, WRITERS) == []
    with store.engine.connect() as conn:
        naive_total = conn.execute(text("SELECT n FROM naive_counter WHERE id = 1")).scalar_one()
    lost = WRITERS * INCREMENTS - naive_total
    print(f"naive read-modify-write: {naive_total} of 1600 increments survived, {lost} lost")
    assert lost > 0, "the control is meant to show the lost-update bug CAS prevents"


def test_concurrent_appends_get_dense_sequence_numbers(store: Store) -> None:
    store.create_run("busy", RunSpec(objective="append", workspace="/tmp/ws"))
    per_thread = 25

    def appender(i: int) -> None:
        for k in range(per_thread):
            store.append_transcript("busy", Message.user_text(f"t{i}-{k}"), token_estimate=1)
            store.append_audit("busy", ToolRan(tool="t", call_id=f"{i}-{k}", is_error=False))

    assert run_threads(appender, 8) == []
    assert [e.seq for e in store.transcript("busy")] == list(range(1, 8 * per_thread + 1))
    assert [e.seq for e in store.audit("busy")] == list(range(1, 8 * per_thread + 2))  # + run_started
    assert store.verify_chain("busy").ok
