"""Appends on a cached head under contention: many threads on two stores (two caches, as two worker
processes have) lose nothing and number densely; a store whose cache went stale because another
appended is corrected; a batch of audit events is consecutive and all-or-nothing; and a history
written the way appends used to write it (under `SELECT ... FOR UPDATE`) verifies and continues."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterator

import pytest
from sqlalchemy import insert, select, text, update

from longrun.errors import RunNotFoundError
from longrun.models import Message, RunSpec, chain_hash, utcnow
from longrun.models.audit import GateVerdict, RunControl, ToolRan
from longrun.store import InvalidInputError, Store
from longrun.store import appends as appends_module
from longrun.store.chain import audit_payload, transcript_payload
from longrun.store.tables import AuditEventRow, RunRow, TranscriptEntryRow, core_table
from tests.support.threads import run_threads

THREADS = 8
PER_THREAD = 50


def _spec() -> RunSpec:
    return RunSpec(objective="append under contention", workspace="/tmp/ws")


def _ran(call_id: str) -> ToolRan:
    return ToolRan(tool="read_file", call_id=call_id, is_error=False)


@pytest.fixture
def two(db_url: str, store: Store) -> Iterator[tuple[Store, Store]]:
    """Two stores on one database: two pools and two head caches."""
    with Store.from_url(db_url) as other:
        yield store, other


def _verified(store: Store, run_id: str) -> None:
    verdict = store.verify_chain(run_id)
    assert verdict.ok, str(verdict)


@pytest.mark.parametrize("optimistic_tries", [appends_module.OPTIMISTIC_TRIES, 1])
def test_concurrent_audit_appends_through_two_stores_all_land(
    two: tuple[Store, Store], monkeypatch: pytest.MonkeyPatch, optimistic_tries: int
) -> None:
    """8 threads x 50 appends, half through each store; with one optimistic try most lost races
    end in the locked fallback, so both ways an append lands are contended."""
    monkeypatch.setattr(appends_module, "OPTIMISTIC_TRIES", optimistic_tries)
    a, b = two
    a.create_run("hot", _spec())

    def appender(i: int) -> None:
        s = (a, b)[i % 2]
        for k in range(PER_THREAD):
            s.append_audit("hot", _ran(f"{i}-{k}"), actor=f"thread-{i}")

    assert run_threads(appender, THREADS) == []
    events = a.audit("hot")
    assert [e.seq for e in events] == list(range(1, THREADS * PER_THREAD + 2))  # + run_started
    assert Counter(e.actor for e in events[1:]) == {f"thread-{i}": PER_THREAD for i in range(THREADS)}
    assert len({e.event.call_id for e in events[1:]}) == THREADS * PER_THREAD  # type: ignore[union-attr]
    _verified(a, "hot")


def test_concurrent_transcript_appends_through_two_stores_all_land(two: tuple[Store, Store]) -> None:
    a, b = two
    a.create_run("hot", _spec())
    seqs: list[int] = []

    def appender(i: int) -> None:
        s = (a, b)[i % 2]
        for k in range(PER_THREAD):
            seqs.append(s.append_transcript("hot", Message.user_text(f"{i}-{k}"), token_estimate=k, turn=i))

    assert run_threads(appender, THREADS) == []
    entries = b.transcript("hot")
    assert [e.seq for e in entries] == list(range(1, THREADS * PER_THREAD + 1))
    assert sorted(seqs) == [e.seq for e in entries], "each append returned the number it was written under"
    assert Counter(e.turn for e in entries) == {i: PER_THREAD for i in range(THREADS)}
    _verified(b, "hot")


def test_concurrent_batches_stay_consecutive(two: tuple[Store, Store]) -> None:
    a, b = two
    a.create_run("hot", _spec())
    batches: list[list[int]] = []

    def appender(i: int) -> None:
        s = (a, b)[i % 2]
        for k in range(10):
            batches.append(s.append_audits("hot", [(_ran(f"{i}-{k}-{j}"), f"thread-{i}") for j in range(3)]))

    assert run_threads(appender, THREADS) == []
    assert sorted(n for batch in batches for n in batch) == list(range(2, THREADS * 10 * 3 + 2))
    events = {e.seq: e for e in a.audit("hot")}
    for batch in batches:
        assert batch == list(range(batch[0], batch[0] + 3))
        assert len({events[n].actor for n in batch}) == 1, "a batch is not interleaved with another"
    _verified(a, "hot")


def test_a_stale_cache_is_corrected_and_the_chain_stays_whole(two: tuple[Store, Store]) -> None:
    """A appends, then B (A's cache is now stale), then A again: A's guess is refused, it reads
    the head and chains on B's rows."""
    a, b = two
    a.create_run("r", _spec())
    assert a.append_audit("r", _ran("a1")) == 2
    assert a.append_transcript("r", Message.user_text("a1"), token_estimate=1) == 1
    assert b.append_audit("r", _ran("b1")) == 3
    assert b.append_audits("r", [(_ran("b2"), "b"), (_ran("b3"), "b")]) == [4, 5]
    assert b.append_transcript("r", Message.user_text("b1"), token_estimate=1) == 2
    assert a._chain_heads["audit"]["r"][0] == 2, "A still remembers the head it wrote"
    assert a.append_audit("r", _ran("a2")) == 6
    assert a.append_transcript("r", Message.user_text("a2"), token_estimate=1) == 3
    assert b.append_audit("r", _ran("b4")) == 7

    events = a.audit("r")
    assert [(e.seq, e.event.call_id) for e in events[1:]] == [  # type: ignore[union-attr]
        (2, "a1"), (3, "b1"), (4, "b2"), (5, "b3"), (6, "a2"), (7, "b4")]
    assert [e.message.content[0].text for e in a.transcript("r")] == ["a1", "b1", "a2"]  # type: ignore[union-attr]
    for before, after in itertools.pairwise(events):
        assert after.prev_hash == before.hash
    _verified(a, "r")
    _verified(b, "r")


# ---------------------------------------------------------------------- the batch


def test_a_batch_gets_consecutive_numbers_and_verifies(store: Store) -> None:
    store.create_run("r", _spec())
    verdict = GateVerdict(action_id="a1", tool="read_file", verdict="allow", rule="read_only", reason="reads only",
                          action_hash="0" * 64, state_version=1)
    assert store.append_audit("r", _ran("before")) == 2
    assert store.append_audits("r", [(verdict, "gate"), (_ran("c1"), "tool"), (RunControl(action="pause"), "human")]) \
        == [3, 4, 5]
    assert store.append_audit("r", _ran("after")) == 6
    events = store.audit("r")
    assert [(e.seq, e.kind, e.actor) for e in events[2:5]] == [
        (3, "gate_verdict", "gate"), (4, "tool_ran", "tool"), (5, "run_control", "human")]
    assert events[2].event == verdict
    assert events[2].prev_hash == events[1].hash and events[3].prev_hash == events[2].hash
    assert len({e.created_at for e in events[2:5]}) == 1, "one batch, one statement, one time"
    _verified(store, "r")


def _audit_count(store: Store) -> int:
    with store.engine.connect() as conn:
        return int(conn.execute(text("SELECT count(*) FROM audit_events")).scalar_one())


@pytest.mark.parametrize(("events", "fragment"), [
    ([(_ran("ok"), "tool"), ({"kind": "made_up"}, "tool"), (_ran("ok2"), "tool")],
     "events[1]: invalid audit event"),
    ([(_ran("ok"), "tool"), ({"kind": "tool_ran", "tool": "t"}, "tool")], "events[1]: invalid audit event"),
    ([(_ran("ok"), "tool"), (_ran("ok2"), "")], "events[1]: actor: must not be empty"),
    ([(_ran("ok"), "tool"), (_ran("x" * 1_100_000), "tool")], "events[1]: event: "),
    ([(_ran("ok"), "tool"), _ran("no actor")], "events[1]: expected an (event, actor) pair"),
    ("not a list", "events: expected a sequence of (event, actor) pairs"),
])
def test_an_invalid_event_in_a_batch_writes_none_of_it(store: Store, events: object, fragment: str) -> None:
    store.create_run("r", _spec())
    before = _audit_count(store)
    with pytest.raises(InvalidInputError) as info:
        store.append_audits("r", events)  # type: ignore[arg-type]
    assert fragment in str(info.value), str(info.value)
    assert _audit_count(store) == before
    assert store.append_audit("r", _ran("then")) == 2
    _verified(store, "r")


def test_an_empty_batch_writes_nothing_and_an_unknown_run_is_named(store: Store) -> None:
    store.create_run("r", _spec())
    assert store.append_audits("r", []) == []
    assert [e.seq for e in store.audit("r")] == [1]
    with pytest.raises(RunNotFoundError, match="unknown run id 'ghost'"):
        store.append_audits("ghost", [(_ran("x"), "tool")])


# ---------------------------------------------------------------------- histories written before


def _append_the_old_way(store: Store, run_id: str, n: int) -> None:
    """Append n audit events and n transcript entries as the store did before appends were one
    statement: lock the run row, read the heads, insert, move the heads, in a session transaction."""
    for i in range(n):
        with store.transaction("old append") as s:
            run = s.execute(select(RunRow.audit_head, RunRow.audit_count, RunRow.transcript_head,
                                   RunRow.transcript_count).where(RunRow.run_id == run_id).with_for_update()).one()
            now = utcnow()
            event = _ran(f"old-{i}").model_dump(mode="json")
            seq = run.audit_count + 1
            digest = chain_hash(run.audit_head, audit_payload(run_id, seq, "tool_ran", event, "old", now))
            s.execute(insert(core_table(AuditEventRow)).values(
                run_id=run_id, seq=seq, kind="tool_ran", event=event, actor="old", created_at=now,
                prev_hash=run.audit_head, hash=digest))
            content = Message.user_text(f"old ✓ {i}").model_dump(mode="json")
            tseq = run.transcript_count + 1
            tdigest = chain_hash(run.transcript_head, transcript_payload(run_id, tseq, "user", content, 1, None, i, now))
            s.execute(insert(core_table(TranscriptEntryRow)).values(
                run_id=run_id, seq=tseq, role="user", content=content, token_estimate=1, usage=None, turn=i,
                created_at=now, prev_hash=run.transcript_head, hash=tdigest))
            s.execute(update(RunRow).where(RunRow.run_id == run_id).values(
                audit_head=digest, audit_count=seq, transcript_head=tdigest, transcript_count=tseq))


def test_a_history_written_before_verifies_and_continues(db_url: str, store: Store) -> None:
    store.create_run("r", _spec())
    _append_the_old_way(store, "r", 3)
    _verified(store, "r")
    # this store's caches are stale (it did not see the old-style appends); a new store's are empty
    assert store.append_audit("r", _ran("new")) == 5
    assert store.append_transcript("r", Message.user_text("new"), token_estimate=1) == 4
    with Store.from_url(db_url) as fresh:
        assert fresh.append_audits("r", [(_ran("n1"), "new"), (_ran("n2"), "new")]) == [6, 7]
        assert fresh.append_transcript("r", Message.user_text("newer"), token_estimate=1) == 5
    _append_the_old_way(store, "r", 1)  # and the old way still works on top of the new
    assert store.append_audit("r", _ran("last")) == 9
    assert [e.seq for e in store.audit("r")] == list(range(1, 10))
    assert [e.seq for e in store.transcript("r")] == list(range(1, 7))
    _verified(store, "r")
