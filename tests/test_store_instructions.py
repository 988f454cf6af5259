"""The instruction inbox on real PostgreSQL: a human's `say` text is queued in Postgres (redacted,
append-only) and read back by (run, id); an unknown id, or an id of another run, is refused."""

from __future__ import annotations

import random
import secrets
import string
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

import psycopg
import pytest
from psycopg import errors
from sqlalchemy import text

from longrun.errors import AppendOnlyViolation, RunNotFoundError
from longrun.models import RunSpec
from longrun.store import APPEND_ONLY_TABLES, InstructionRecord, InvalidInputError, Store, libpq_url
from longrun.store.core import MAX_INSTRUCTION_CHARS
from longrun.store.roles import app_role_url, ensure_login


def canaries() -> dict[str, str]:
    """Fresh secrets of the shapes tests/test_secrets.py plants (copied, so that this module does
    not import the whole-run machinery that one needs)."""
    rng = random.SystemRandom()

    def rnd(n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
        return "".join(rng.choice(alphabet) for _ in range(n))

    return {
        "anthropic_key": "sk-ant-api03-" + rnd(48),
        "aws_access_key": "AKIA" + rnd(16, string.ascii_uppercase + string.digits),
        "github_token": "ghp_" + rnd(36),
        "url_password": "pw" + rnd(18),
    }


def _run(store: Store, run_id: str = "r") -> str:
    store.create_run(run_id, RunSpec(objective="fix the parser", workspace="/tmp/ws"))
    return run_id


def _rows(store: Store) -> list[tuple]:
    with store.engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text(
            "SELECT run_id, instruction_id, text, as_constraint, actor FROM instructions ORDER BY run_id, instruction_id"
        ))]


def test_round_trip(store: Store) -> None:
    _run(store)
    assert store.queue_instruction("r", "keep the public API", as_constraint=True) == 1
    assert store.queue_instruction("r", "also look at the tests", as_constraint=False, actor="alice") == 2

    first = store.get_instruction("r", 1)
    assert isinstance(first, InstructionRecord)
    assert (first.run_id, first.instruction_id, first.text, first.as_constraint, first.actor) == (
        "r", 1, "keep the public API", True, "human")
    assert isinstance(first.created_at, datetime) and first.created_at.tzinfo is not None
    second = store.get_instruction("r", 2)
    assert (second.text, second.as_constraint, second.actor) == ("also look at the tests", False, "alice")
    assert second.created_at >= first.created_at
    with pytest.raises(AttributeError):
        first.text = "changed"  # type: ignore[misc]  # a frozen record

    # queuing touches nothing else of the run: no state version, transcript entry or audit event
    assert [v.version for v in store.state_history("r")] == [1]
    assert store.transcript("r") == [] and [e.kind for e in store.audit("r")] == ["run_started"]
    assert store.verify_chain("r").ok


def test_the_text_is_redacted_before_it_is_stored(store: Store) -> None:
    _run(store)
    c = canaries()
    said = (f"use {c['anthropic_key']} and AWS {c['aws_access_key']}, push with {c['github_token']}, "
            f"db postgres://app:{c['url_password']}@db.internal:5432/prod")
    instruction_id = store.queue_instruction("r", said, as_constraint=True)

    stored = store.get_instruction("r", instruction_id).text
    for kind in ("anthropic_key", "aws_access_key", "github_token", "url_password"):
        assert c[kind] not in stored
        assert f"[REDACTED:{kind}]" in stored
    assert stored.startswith("use [REDACTED:anthropic_key] and AWS ")
    raw = " ".join(str(v) for row in _rows(store) for v in row)  # not in the table in any form
    assert not [k for k in ("anthropic_key", "aws_access_key", "github_token", "url_password") if c[k] in raw]


@pytest.mark.parametrize("sql", [
    "UPDATE instructions SET text = 'something else'",
    "UPDATE instructions SET as_constraint = NOT as_constraint",
    "DELETE FROM instructions",
    "TRUNCATE instructions",
])
def test_instructions_are_append_only(store: Store, sql: str) -> None:
    assert "instructions" in APPEND_ONLY_TABLES
    _run(store)
    store.queue_instruction("r", "keep the public API", as_constraint=True)
    before = _rows(store)
    op = sql.split()[0]
    with pytest.raises(AppendOnlyViolation, match=f"table instructions is append-only: {op} refused"):
        with store.transaction(f"{op} on instructions") as session:
            session.execute(text(sql))
    assert _rows(store) == before
    assert store.get_instruction("r", 1).text == "keep the public API"


def test_an_unknown_id_is_refused_naming_it(store: Store) -> None:
    _run(store)
    with pytest.raises(InvalidInputError, match="instruction_id: run 'r' has no instruction 1"):
        store.get_instruction("r", 1)
    store.queue_instruction("r", "one", as_constraint=False)
    with pytest.raises(InvalidInputError, match="run 'r' has no instruction 7"):
        store.get_instruction("r", 7)
    for bad, fragment in ((0, "must be >= 1"), (-3, "must be >= 1"), ("1", "expected an integer"),
                          (True, "expected an integer"), (None, "expected an integer")):
        with pytest.raises(InvalidInputError, match=f"instruction_id: {fragment}"):
            store.get_instruction("r", bad)  # type: ignore[arg-type]
    with pytest.raises(RunNotFoundError, match="unknown run id 'ghost'"):
        store.get_instruction("ghost", 1)


def test_an_id_of_another_run_is_not_readable_through_this_run(store: Store) -> None:
    _run(store, "a")
    _run(store, "b")
    assert store.queue_instruction("a", "a's first", as_constraint=False) == 1
    assert store.queue_instruction("a", "a's secret plan", as_constraint=False) == 2
    assert store.queue_instruction("b", "b's first", as_constraint=True) == 1  # numbered per run

    with pytest.raises(InvalidInputError, match="run 'b' has no instruction 2"):
        store.get_instruction("b", 2)
    assert store.get_instruction("b", 1).text == "b's first"
    assert store.get_instruction("a", 1).text == "a's first"


def test_bad_instructions_are_refused_and_write_nothing(store: Store) -> None:
    _run(store)
    for kwargs, fragment in (
        ({"text": ""}, "text: must not be empty"),
        ({"text": "  \n\t "}, "text: must not be empty"),
        ({"text": "x" * (MAX_INSTRUCTION_CHARS + 1)}, f"text: {MAX_INSTRUCTION_CHARS + 1} characters is over the limit"),
        ({"text": 42}, "text: expected a string"),
        ({"text": "ok", "as_constraint": "yes"}, "as_constraint: expected a bool"),
        ({"text": "ok", "as_constraint": 1}, "as_constraint: expected a bool"),
        ({"text": "ok", "actor": ""}, "actor: must not be empty"),
        ({"text": "ok", "actor": "a" * 201}, "actor: 201 characters is over the limit"),
    ):
        call = {"as_constraint": False, **kwargs}
        with pytest.raises(InvalidInputError, match=fragment):
            store.queue_instruction("r", **call)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="run_id: must not be empty"):
        store.queue_instruction("", "ok", as_constraint=False)
    with pytest.raises(RunNotFoundError, match="unknown run id 'ghost'"):
        store.queue_instruction("ghost", "ok", as_constraint=False)
    assert _rows(store) == []

    assert store.queue_instruction("r", "x" * MAX_INSTRUCTION_CHARS, as_constraint=False) == 1  # the limit itself
    assert len(store.get_instruction("r", 1).text) == MAX_INSTRUCTION_CHARS


def test_concurrent_says_get_distinct_dense_ids(store: Store) -> None:
    _run(store)
    with ThreadPoolExecutor(max_workers=8) as pool:
        ids = list(pool.map(lambda i: store.queue_instruction("r", f"instruction {i}", as_constraint=False),
                            range(40)))
    assert sorted(ids) == list(range(1, 41))
    by_id = {r[1]: r[2] for r in _rows(store)}
    assert sorted(by_id.values()) == sorted(f"instruction {i}" for i in range(40))
    assert all(store.get_instruction("r", i).text == by_id[i] for i in ids)


def test_the_app_role_may_only_insert_and_select(db_url: str) -> None:
    """As the role workers connect as: queue and read work; UPDATE, DELETE and TRUNCATE are denied
    by privilege even when the owner has switched the append-only trigger off."""
    password = secrets.token_hex(12)
    ensure_login(db_url, password=password)
    app_url = app_role_url(db_url, password=password)
    with Store.from_url(app_url) as app_store:
        _run(app_store)
        assert app_store.queue_instruction("r", "as the app role", as_constraint=True) == 1
        assert app_store.get_instruction("r", 1).text == "as the app role"

    with psycopg.connect(libpq_url(db_url), autocommit=True) as owner:
        owner.execute("ALTER TABLE instructions DISABLE TRIGGER USER")
    try:
        with psycopg.connect(libpq_url(app_url), autocommit=True) as conn:
            for sql in ("UPDATE instructions SET text = 'x'", "DELETE FROM instructions", "TRUNCATE instructions"):
                with pytest.raises(errors.InsufficientPrivilege, match="permission denied"):
                    conn.execute(sql)
    finally:
        with psycopg.connect(libpq_url(db_url), autocommit=True) as owner:
            owner.execute("ALTER TABLE instructions ENABLE TRIGGER USER")
            assert owner.execute("SELECT text FROM instructions").fetchall() == [("as the app role",)]
