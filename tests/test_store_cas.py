"""The compare-and-set hot path: one statement in autocommit (no BEGIN/COMMIT round trips) once the
store knows the head's chain hash; a wrong or missing hash costs a read of the head and never a
badly chained row; several stores on one run (other processes) stay correct; 40P01 is retried."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import event, text

from longrun.errors import StaleStateError
from longrun.models import RunSpec, chain_hash
from longrun.store import Store
from longrun.store.chain import state_version_payload


def _spec() -> RunSpec:
    return RunSpec(objective="count", constraints=["never push to main"], workspace="/tmp/ws")


@contextmanager
def _statements(store: Store) -> Iterator[list[tuple[str, bool]]]:
    """Every statement the store's engine sends, with whether its connection was in autocommit."""
    seen: list[tuple[str, bool]] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        seen.append((" ".join(statement.split()), bool(conn.connection.dbapi_connection.autocommit)))

    event.listen(store.engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(store.engine, "before_cursor_execute", record)


def _note(store: Store, run_id: str, text_: str) -> Any:
    head = store.load_state(run_id)
    return head.model_copy(update={"notes": [text_]})


def test_a_warm_compare_and_set_is_one_autocommit_statement(store: Store) -> None:
    store.create_run("r", _spec())
    draft = _note(store, "r", "one")  # load_state tells the store the head's chain hash

    with _statements(store) as seen:
        assert store.compare_and_set("r", 1, draft, actor="agent", reason="one") == 2
        assert store.compare_and_set("r", 2, draft, actor="agent", reason="two") == 3
    assert len(seen) == 2, seen
    assert all(autocommit for _, autocommit in seen), "each compare-and-set is its own single-statement transaction"
    assert all(sql.startswith("WITH upd AS ( UPDATE task_states") for sql, _ in seen)

    history = store.state_history("r")
    assert [(h.version, h.reason) for h in history] == [(1, "run created"), (2, "one"), (3, "two")]
    assert history[1].prev_hash == history[0].hash and history[2].prev_hash == history[1].hash
    assert store.verify_chain("r").ok


def test_a_cold_store_reads_the_head_once(db_url: str, store: Store) -> None:
    store.create_run("r", _spec())
    draft = _note(store, "r", "from another process")
    with Store.from_url(db_url) as cold, _statements(cold) as seen:
        assert cold.compare_and_set("r", 1, draft, actor="other", reason="cold") == 2
        assert cold.compare_and_set("r", 2, draft, actor="other", reason="warm") == 3
    assert [sql.split()[0] for sql, _ in seen] == ["SELECT", "WITH", "WITH"]
    assert store.verify_chain("r").ok


def test_a_wrong_cached_hash_writes_nothing_and_is_corrected(store: Store) -> None:
    store.create_run("r", _spec())
    draft = _note(store, "r", "n")
    store._heads["r"] = (1, "f" * 64)  # as if the store remembered a hash the chain does not have

    with _statements(store) as seen:
        assert store.compare_and_set("r", 1, draft, actor="agent", reason="after a bad guess") == 2
    # the guess was refused by the statement itself, the head read, and the write chained on it
    assert [sql.split()[0] for sql, _ in seen] == ["WITH", "SELECT", "WITH"]
    history = store.state_history("r")
    assert len(history) == 2 and history[1].prev_hash == history[0].hash != "f" * 64
    assert store.verify_chain("r").ok


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
    for before, after in zip(history, history[1:]):
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


def test_a_deadlock_on_the_statement_is_retried(store: Store) -> None:
    """SQLSTATE 40P01 (and 40001) on the compare-and-set statement: nothing was written (it is its
    own transaction), so the store runs it again."""
    store.create_run("r", _spec())
    with store.engine.begin() as conn:
        conn.execute(text("""CREATE FUNCTION fail_once(text) RETURNS void LANGUAGE plpgsql AS $$
                             BEGIN RAISE EXCEPTION 'simulated deadlock' USING ERRCODE = '40P01'; END $$"""))
    draft = _note(store, "r", "n")
    failed: list[str] = []

    def fail_first_cas(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> Any:
        if statement.lstrip().startswith("WITH upd AS") and not failed:
            failed.append(statement)
            return "SELECT fail_once(%(run_id)s)", parameters
        return statement, parameters

    event.listen(store.engine, "before_cursor_execute", fail_first_cas, retval=True)
    try:
        assert store.compare_and_set("r", 1, draft, actor="agent", reason="retried") == 2
    finally:
        event.remove(store.engine, "before_cursor_execute", fail_first_cas)
    assert len(failed) == 1
    assert [h.version for h in store.state_history("r")] == [1, 2]
    assert store.verify_chain("r").ok
