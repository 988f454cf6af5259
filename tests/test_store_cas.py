"""The compare-and-set hot path: one statement in autocommit (no BEGIN/COMMIT round trips) once the
store knows the head's chain hash; a wrong or missing hash costs a read of the head and never a
badly chained row; several stores on one run (other processes) stay correct; 40P01 is retried."""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest
from psycopg import pq
from sqlalchemy import text

from longrun.errors import StaleStateError, StoreError
from longrun.models import RunSpec, chain_hash
from longrun.store import Store
from longrun.store.chain import state_version_payload


def _spec() -> RunSpec:
    return RunSpec(objective="count", constraints=["never push to main"], workspace="/tmp/ws")


@pytest.fixture
def one(db_url: str) -> Iterator[Store]:
    """A store whose pool holds exactly one connection, so every call's traffic can be traced."""
    with Store.from_url(db_url, pool_size=1, max_overflow=0) as s:
        yield s


@contextmanager
def _round_trips(store: Store) -> Iterator[list[str]]:
    """Every round trip on the store's one pooled connection, as libpq traces it: one entry per
    ReadyForQuery the server sends, named by what the client sent (`;` would be a pool pre-ping,
    `BEGIN`/`COMMIT` transaction control, else the statement's first words)."""
    fairy = store.engine.raw_connection()
    conn = fairy.driver_connection
    fairy.close()
    assert isinstance(conn, psycopg.Connection)
    trips: list[str] = []
    with tempfile.TemporaryFile("w+") as f:
        conn.pgconn.trace(f.fileno())
        conn.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE)
        try:
            yield trips
        finally:
            conn.pgconn.untrace()
            f.seek(0)
            lines = f.read().splitlines()
    messages: list[list[str]] = []  # [who, kind, argument]; a statement's newlines continue the argument
    for line in lines:
        parts = line.split("\t")
        if len(parts) >= 3 and parts[0] in ("F", "B"):
            messages.append([parts[0], parts[2], "\t".join(parts[3:]).strip()])
        elif messages:
            messages[-1][2] += " " + line
    prepared: dict[str, str] = {}
    current: str | None = None
    for who, kind, arg in messages:
        if who == "F" and current is None:
            if kind == "Query":
                current = arg.strip('"')
            elif kind == "Parse":
                name, sql = arg.split(" ", 1)
                current = " ".join(sql.lstrip('"').split()[:3])
                if name != '""':
                    prepared[name] = current
            elif kind == "Bind":
                current = prepared.get(arg.split(" ")[1], arg)
        elif who == "B" and kind == "ReadyForQuery":
            trips.append(current or "?")
            current = None


def _note(store: Store, run_id: str, text_: str) -> Any:
    head = store.load_state(run_id)
    return head.model_copy(update={"notes": [text_]})


def test_a_warm_compare_and_set_is_one_round_trip(one: Store) -> None:
    one.create_run("r", _spec())
    draft = _note(one, "r", "one")  # load_state tells the store the head's chain hash

    with _round_trips(one) as trips:
        assert one.compare_and_set("r", 1, draft, actor="agent", reason="one") == 2
    # the statement alone: no pre-ping, no BEGIN, no COMMIT, no lock, no read
    assert trips == ["WITH upd AS"], trips

    with _round_trips(one) as trips:
        for v in range(2, 12):
            assert one.compare_and_set("r", v, draft, actor="agent", reason=f"n{v}") == v + 1
    # psycopg prepares the statement after a few runs on a connection (one more round trip, once
    # per connection: Parse), then only binds and executes it
    assert (trips.count(";"), trips.count("WITH upd AS"), len(trips)) == (0, 11, 11), trips

    history = one.state_history("r")
    assert [h.version for h in history] == list(range(1, 13))
    assert [h.reason for h in history[:3]] == ["run created", "one", "n2"]
    for before, after in itertools.pairwise(history):
        assert after.prev_hash == before.hash
    assert one.verify_chain("r").ok


def test_load_state_is_one_round_trip(one: Store) -> None:
    one.create_run("r", _spec())
    with _round_trips(one) as trips:
        one.load_state("r")
    assert trips == ["SELECT t.state, t.state_version,"], trips


def test_a_cold_store_reads_the_head_once(db_url: str, store: Store) -> None:
    store.create_run("r", _spec())
    draft = _note(store, "r", "from another process")
    with Store.from_url(db_url, pool_size=1, max_overflow=0) as cold, _round_trips(cold) as trips:
        assert cold.compare_and_set("r", 1, draft, actor="other", reason="cold") == 2
        assert cold.compare_and_set("r", 2, draft, actor="other", reason="warm") == 3
    assert trips == ["SELECT t.state_version, r.state_head", "WITH upd AS", "WITH upd AS"], trips
    assert store.verify_chain("r").ok


def test_a_wrong_cached_hash_writes_nothing_and_is_corrected(one: Store) -> None:
    one.create_run("r", _spec())
    draft = _note(one, "r", "n")
    one._heads["r"] = (1, "f" * 64)  # as if the store remembered a hash the chain does not have

    with _round_trips(one) as trips:
        assert one.compare_and_set("r", 1, draft, actor="agent", reason="after a bad guess") == 2
    # the guess was refused by the statement itself, the head read, and the write chained on it
    assert trips == ["WITH upd AS", "SELECT t.state_version, r.state_head", "WITH upd AS"], trips
    history = one.state_history("r")
    assert len(history) == 2 and history[1].prev_hash == history[0].hash != "f" * 64
    assert one.verify_chain("r").ok


def test_two_stores_on_one_run_stay_correct(db_url: str, store: Store) -> None:
    """Two workers (two stores, two caches) taking turns: each one's remembered head goes stale
    when the other writes; a stale write names the real head, and the chain stays whole."""
    store.create_run("r", _spec())
    with Store.from_url(db_url) as other:
        a = _note(store, "r", "a")
        assert store.compare_and_set("r", 1, a, actor="a", reason="a1") == 2
        b = _note(other, "r", "b")
        assert other.compare_and_set("r", 2, b, actor="b", reason="b1") == 3

        # `store` remembers version 2 as the head; the database says 3
        with pytest.raises(StaleStateError, match="expected state_version 2, but the head is 3") as info:
            store.compare_and_set("r", 2, a, actor="a", reason="late")
        assert (info.value.expected, info.value.actual) == (2, 3)

        # a writer that learned the version some other way (not through this store's load)
        assert store.compare_and_set("r", other.head_version("r"), a, actor="a", reason="a2") == 4
        with pytest.raises(StaleStateError, match="expected state_version 3, but the head is 4"):
            other.compare_and_set("r", 3, b, actor="b", reason="late")
        assert other.update_state("r", 4, lambda s: s.notes.append("b2"), actor="b", reason="b2").state_version == 5

    history = store.state_history("r")
    assert [(h.version, h.actor) for h in history] == [(1, "operator"), (2, "a"), (3, "b"), (4, "a"), (5, "b")]
    for before, after in itertools.pairwise(history):
        assert after.prev_hash == before.hash
    assert store.verify_chain("r").ok


def test_the_stored_hash_is_chain_hash_over_the_canonical_row(store: Store) -> None:
    """Not a different hash format: the digest is `chain_hash(prev_hash, payload)` of what the row
    holds, text outside ASCII included (the `json` column keeps the hashed text byte for byte)."""
    store.create_run("r", _spec())
    draft = _note(store, "r", "naïve café ✓ 😀 \"quoted\" \\ back\nslash")
    store.compare_and_set("r", 1, draft, actor="agent ✓", reason="unicode — ok")
    with store.engine.connect() as conn:
        row = conn.execute(text("SELECT * FROM task_state_versions WHERE run_id = 'r' AND version = 2")).mappings().one()
        head = conn.execute(text("SELECT state_head, state_count FROM runs WHERE run_id = 'r'")).one()
    expected = chain_hash(row["prev_hash"], state_version_payload(
        "r", 2, row["state"], row["actor"], row["reason"], row["created_at"]))
    assert row["hash"] == expected == head.state_head and head.state_count == 2
    assert row["state"]["notes"] == ["naïve café ✓ 😀 \"quoted\" \\ back\nslash"]
    assert store.verify_chain("r").ok


def _fail_updates(store: Store, sqlstate: str, times: int) -> None:
    """Make the next `times` updates of task_states fail with `sqlstate` (a sequence counts them:
    it is not rolled back with the failed statement)."""
    with store.engine.begin() as conn:
        conn.execute(text("CREATE SEQUENCE failures"))
        conn.execute(text(f"""CREATE FUNCTION fail_update() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF nextval('failures') <= {times} THEN
                    RAISE EXCEPTION 'simulated failure' USING ERRCODE = '{sqlstate}';
                END IF;
                RETURN NEW;
            END $$"""))
        conn.execute(text("CREATE TRIGGER fail_update BEFORE UPDATE ON task_states "
                          "FOR EACH ROW EXECUTE FUNCTION fail_update()"))


@pytest.mark.parametrize("sqlstate", ["40P01", "40001"])
def test_deadlock_and_serialization_failure_are_retried(one: Store, sqlstate: str) -> None:
    """The compare-and-set statement is its own transaction: when it fails nothing was written, so
    the store runs it again."""
    one.create_run("r", _spec())
    draft = _note(one, "r", "n")
    _fail_updates(one, sqlstate, times=2)

    with _round_trips(one) as trips:
        assert one.compare_and_set("r", 1, draft, actor="agent", reason="retried") == 2
    assert trips.count("WITH upd AS") == 3, trips
    history = one.state_history("r")
    assert [(h.version, h.reason) for h in history] == [(1, "run created"), (2, "retried")]
    assert one.verify_chain("r").ok


def test_a_failed_statement_writes_nothing_and_leaves_the_connection_usable(one: Store) -> None:
    one.create_run("r", _spec())
    draft = _note(one, "r", "n")
    _fail_updates(one, "P0001", times=1)

    with pytest.raises(StoreError, match=r"compare_and_set failed: simulated failure \(SQLSTATE P0001\)"):
        one.compare_and_set("r", 1, draft, actor="agent", reason="refused")
    assert [h.version for h in one.state_history("r")] == [1]
    assert one.verify_chain("r").ok
    # the pooled connection went back in transaction mode, not autocommit
    fairy = one.engine.raw_connection()
    try:
        assert fairy.driver_connection.autocommit is False
    finally:
        fairy.close()
    assert one.compare_and_set("r", 1, draft, actor="agent", reason="then accepted") == 2
    assert one.verify_chain("r").ok


def test_a_dropped_connection_fails_one_call_then_is_replaced(one: Store, pg_admin_url: str) -> None:
    """No pre-ping (it cost a round trip per call): a connection the server dropped while idle
    fails the one call that meets it, before its statement runs, with a clear error; the pool then
    replaces it and the retry (Temporal retries the activity) goes through. Nothing is lost."""
    one.create_run("r", _spec())
    draft = _note(one, "r", "n")
    fairy = one.engine.raw_connection()
    pid = fairy.driver_connection.info.backend_pid
    fairy.close()
    with psycopg.connect(pg_admin_url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
    with pytest.raises(StoreError, match="terminating connection"):
        one.compare_and_set("r", 1, draft, actor="agent", reason="after a restart")
    assert one.load_state("r").state_version == 1, "the failed call wrote nothing"
    assert one.compare_and_set("r", 1, draft, actor="agent", reason="after a restart") == 2
    assert one.verify_chain("r").ok
