"""`create_run(..., opening=...)`: the run and its opening message land in one transaction, or
neither does (real PostgreSQL)."""

from __future__ import annotations

import psycopg
import pytest
from sqlalchemy import text

from longrun.errors import RunNotFoundError, StoreError
from longrun.models import Message, RunSpec
from longrun.store import InvalidInputError, Store, libpq_url
from longrun.store.core import MAX_MESSAGE_BYTES

TABLES = ("runs", "task_states", "task_state_versions", "transcript_entries", "audit_events")
CANARY = "sk-ant-api03-" + "Qx7" * 16


def _spec(**kw: object) -> RunSpec:
    return RunSpec.model_validate({"objective": "review the payment module", "workspace": "/tmp/ws", **kw})


def _counts(store: Store, run_id: str) -> dict[str, int]:
    with store.engine.connect() as conn:
        return {t: conn.execute(text(f"SELECT count(*) FROM {t} WHERE run_id = :r"), {"r": run_id}).scalar_one()
                for t in TABLES}


NOTHING = dict.fromkeys(TABLES, 0)


def test_the_opening_message_is_entry_one_of_turn_zero(store: Store) -> None:
    opening = Message.user_text(f"Objective: review the payment module (key {CANARY})")
    state = store.create_run("r", _spec(), opening=opening, opening_token_estimate=17)

    assert state.state_version == 1
    assert _counts(store, "r") == {"runs": 1, "task_states": 1, "task_state_versions": 1, "transcript_entries": 1,
                                   "audit_events": 1}
    [entry] = store.transcript("r")
    assert (entry.seq, entry.turn, entry.role, entry.token_estimate, entry.usage) == (1, 0, "user", 17, None)
    body = entry.message.model_dump_json()
    assert CANARY not in body and "[REDACTED:anthropic_key]" in body
    assert store.verify_chain("r").ok  # hash-chained, and the head on `runs` moved with it
    assert store.last_transcript_entry("r") == entry
    assert store.append_transcript("r", Message.user_text("next"), token_estimate=1, turn=1) == 2
    assert store.verify_chain("r").ok

    # stored exactly as a separate append_transcript would have stored it
    store.create_run("r2", _spec())
    store.append_transcript("r2", opening, token_estimate=17, turn=0)
    [same] = store.transcript("r2")
    assert (same.message, same.role, same.token_estimate, same.turn) == (entry.message, "user", 17, 0)


def test_without_an_opening_the_transcript_stays_empty(store: Store) -> None:
    store.create_run("r", _spec())
    assert store.transcript("r") == []
    assert store.append_transcript("r", Message.user_text("first"), token_estimate=1, turn=0) == 1


def test_a_child_run_gets_its_opening_too(store: Store) -> None:
    store.create_run("parent", _spec())
    store.create_run("child", _spec(), parent_run_id="parent", actor="run:parent",
                     opening=Message.user_text("Subagent brief: look"), opening_token_estimate=3)
    assert [e.seq for e in store.transcript("child")] == [1]
    assert store.transcript("parent") == []
    with pytest.raises(RunNotFoundError):
        store.create_run("orphan", _spec(), parent_run_id="nope", opening=Message.user_text("x"))
    assert _counts(store, "orphan") == NOTHING


def test_an_oversized_opening_writes_no_run(store: Store) -> None:
    huge = Message.user_text("x" * (MAX_MESSAGE_BYTES + 1))
    with pytest.raises(InvalidInputError, match="opening: .* bytes serialized is over the limit"):
        store.create_run("big", _spec(), opening=huge, opening_token_estimate=1)
    assert _counts(store, "big") == NOTHING


@pytest.mark.parametrize("bad, fragment", [
    ({"opening": {"role": "system", "content": []}}, "invalid opening message: role"),
    ({"opening": Message.user_text("x"), "opening_token_estimate": -1}, "opening_token_estimate: must be >= 0"),
    ({"opening": Message.user_text("x"), "opening_token_estimate": "3"}, "opening_token_estimate: expected an integer"),
])
def test_a_bad_opening_is_refused_by_name_and_writes_nothing(store: Store, bad: dict, fragment: str) -> None:
    with pytest.raises(InvalidInputError, match=fragment):
        store.create_run("bad", _spec(), **bad)
    assert _counts(store, "bad") == NOTHING


def test_a_duplicate_run_id_adds_no_opening(store: Store) -> None:
    store.create_run("dup", _spec())
    before = _counts(store, "dup")
    with pytest.raises(StoreError, match="run 'dup' already exists"):
        store.create_run("dup", _spec(objective="other"), opening=Message.user_text("second opening"),
                         opening_token_estimate=2)
    assert _counts(store, "dup") == before
    assert store.transcript("dup") == []
    assert store.verify_chain("dup").ok


def test_a_failure_after_the_run_row_rolls_the_run_back(store: Store, db_url: str) -> None:
    """The transcript insert is the last write of create_run: make the database refuse it, and the
    run row, state v1, its version and the RunStarted event written before it are gone too."""
    with psycopg.connect(libpq_url(db_url), autocommit=True) as conn:
        conn.execute("""
            CREATE FUNCTION test_refuse_opening() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN RAISE EXCEPTION 'injected failure' USING ERRCODE = 'XX000'; END $$""")
        conn.execute("CREATE TRIGGER refuse_opening BEFORE INSERT ON transcript_entries "
                     "FOR EACH ROW EXECUTE FUNCTION test_refuse_opening()")

    with pytest.raises(StoreError, match="create_run failed: injected failure"):
        store.create_run("half", _spec(), opening=Message.user_text("hello"), opening_token_estimate=1)
    assert _counts(store, "half") == NOTHING

    store.create_run("whole", _spec())  # the same call without the opening works
    assert _counts(store, "whole")["runs"] == 1
