"""Least privilege: workers connect as an app role that is neither superuser nor owner. On the
append-only tables it can only SELECT and INSERT, so history cannot be rewritten through it even
when the owner has disabled the append-only trigger; a whole run works as that role; migrations
need the owner."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import psycopg
import pytest
from psycopg import errors

from longrun.models.audit import RunFinished
from longrun.models.spec import RunSpec
from longrun.store import APPEND_ONLY_TABLES, Store, libpq_url
from longrun.store.roles import app_role_name, app_role_url, ensure_login
from tests.support.harness import running_worker
from tests.support.policy import PlanProvider

APPEND_ONLY = ("task_state_versions", "transcript_entries", "projections", "audit_events", "facts")


@pytest.fixture
def app_url(db_url: str) -> str:
    """The app role's URL on this test's database (with a password, so that it works with trust
    and password authentication alike)."""
    password = secrets.token_hex(12)
    ensure_login(db_url, password=password)
    return app_role_url(db_url, password=password)


@pytest.fixture
def app_store(app_url: str) -> Iterator[Store]:
    with Store.from_url(app_url) as s:
        yield s


def _as(url: str) -> psycopg.Connection:
    return psycopg.connect(libpq_url(url), autocommit=True)


def _run_with_history(app_store: Store, workspace: str) -> str:
    """A run with a row in every append-only table, written as the app role."""
    from longrun.models import Message
    from longrun.models.audit import RunControl

    app_store.create_run("lp-1", RunSpec(objective="least privilege", workspace=workspace))
    app_store.update_state("lp-1", 1, lambda s: s.model_copy(update={"notes": ["n"]}), "test", "note")
    app_store.append_transcript("lp-1", Message.user_text("hello"), token_estimate=1, turn=0)
    app_store.append_audit("lp-1", RunControl(action="pause"))
    return "lp-1"


def test_app_role_is_not_superuser_nor_owner(db_url: str, app_url: str) -> None:
    role = app_role_name()
    with _as(app_url) as conn:
        assert conn.execute("SELECT current_user").fetchone()[0] == role
        super_, createrole, createdb = conn.execute(
            "SELECT rolsuper, rolcreaterole, rolcreatedb FROM pg_roles WHERE rolname = current_user"
        ).fetchone()
        assert (super_, createrole, createdb) == (False, False, False)
        owners = {r[0] for r in conn.execute("SELECT tableowner FROM pg_tables WHERE schemaname = 'public'")}
        assert role not in owners and owners, "the app role owns no table"
        with pytest.raises(errors.InsufficientPrivilege):
            conn.execute("CREATE TABLE sneaky (x int)")  # so it cannot migrate either


@pytest.mark.parametrize("table", APPEND_ONLY)
def test_append_only_tables_refuse_update_delete_truncate_even_without_the_trigger(
    db_url: str, app_url: str, app_store: Store, tmp_path, table: str
) -> None:
    assert table in APPEND_ONLY_TABLES
    _run_with_history(app_store, str(tmp_path))
    with _as(db_url) as owner:
        if table in ("projections", "facts"):  # a row to aim at (compaction writes these in a real run)
            owner.execute("INSERT INTO projections (run_id, version, base_state_version, covers_through_seq, "
                          "content, report) VALUES ('lp-1', 1, 1, 0, '{}', '{}')")
        if table == "facts":
            owner.execute("INSERT INTO facts (run_id, seq, source_seq, kind, source, subject, value, text, where_call, "
                          "count, final, rejected, quoted, supersedes, projection_version) VALUES ('lp-1', 1, 1, "
                          "'rule', 'user', 'x', '', 'never x', '', 1, false, false, false, '{}', 1)")
        owner.execute(f"ALTER TABLE {table} DISABLE TRIGGER USER")  # the owner turns the trigger off
    try:
        with _as(app_url) as conn:
            assert conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] >= 1
            for sql in (f"UPDATE {table} SET run_id = run_id", f"DELETE FROM {table}", f"TRUNCATE {table}"):
                with pytest.raises(errors.InsufficientPrivilege, match="permission denied"):
                    conn.execute(sql)
    finally:
        with _as(db_url) as owner:
            owner.execute(f"ALTER TABLE {table} ENABLE TRIGGER USER")
    with _as(db_url) as owner:  # nothing was changed
        assert owner.execute(f"SELECT count(*) FROM {table}").fetchone()[0] >= 1


def test_mutable_heads_only_where_compare_and_set_needs_them(db_url: str, app_url: str, app_store: Store,
                                                              tmp_path) -> None:
    run_id = _run_with_history(app_store, str(tmp_path))
    app_store.set_run_status(run_id, "paused", "asked")  # status and reason: allowed
    # and with the audit head, in the one statement that ends a run
    app_store.end_run(run_id, "completed", "done", [RunFinished(status="completed", reason="done")])
    with _as(app_url) as conn:
        for sql in ("UPDATE runs SET spec = '{}'::jsonb", "UPDATE runs SET run_id = 'x'", "DELETE FROM runs",
                    "DELETE FROM task_states", "UPDATE task_states SET run_id = 'x'", "DELETE FROM artifacts",
                    "UPDATE artifacts SET data = ''::bytea", "DELETE FROM alembic_version"):
            with pytest.raises(errors.InsufficientPrivilege):
                conn.execute(sql)
    assert app_store.verify_chain(run_id).ok
    assert app_store.get_run(run_id).status == "completed"


@pytest.mark.slow
async def test_a_whole_run_works_as_the_app_role(app_store: Store, temporal_client, tmp_path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("hello\n")
    plan = [
        [("read_file", {"path": "notes.txt"})],
        [("record_decision", {"summary": "keep it", "reason": "it is fine"})],
        [("write_note", {"text": "read notes.txt"})],
        [("set_next_action", {"next_action": "stop"})],
    ]
    async with running_worker(temporal_client, app_store, provider=PlanProvider(plan=plan)) as h:
        run_id = await h.start(RunSpec(objective="read and stop", workspace=str(ws)))
        result = await h.result(run_id)
    assert result.status == "completed", result.reason
    assert app_store.verify_chain(run_id).ok
    kinds = [r.kind for r in app_store.audit(run_id)]
    assert kinds.count("tool_ran") == 4 and kinds[-1] == "run_finished"
