"""The alembic chain: upgrade an empty database, downgrade to nothing, upgrade again; the migrated
schema is exactly what `longrun.store.tables` describes, with every constraint named."""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import text

from longrun.errors import AppendOnlyViolation
from longrun.models import RunSpec
from longrun.store import Base, Store, current_revision, downgrade, head_revision, make_engine, migrate

TABLES = {"runs", "task_states", "task_state_versions", "transcript_entries", "artifacts", "projections",
          "audit_events", "instructions", "principals", "credentials", "call_edits", "run_artifacts", "console_keys",
          "console_sessions", "console_sign_ins", "facts", "closed_items", "run_tools", "run_requests", "run_lineage",
          "model_requests", "budget_raises"}


def _tables(url: str) -> set[str]:
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return set(conn.execute(text(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'alembic_version'"
            )).scalars())
    finally:
        engine.dispose()


def _scalar_list(url: str, sql: str) -> list[str]:
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return list(conn.execute(text(sql)).scalars())
    finally:
        engine.dispose()


def test_upgrade_downgrade_upgrade(empty_db_url: str) -> None:
    url = empty_db_url
    assert _tables(url) == set()
    assert current_revision(url) is None

    migrate(url)
    assert current_revision(url) == head_revision() == "0015"
    assert _tables(url) == TABLES
    triggers = _scalar_list(url, "SELECT tgname FROM pg_trigger WHERE NOT tgisinternal ORDER BY tgname")
    assert triggers == sorted([*(f"{t}_{kind}" for t in ("audit_events", "budget_raises", "call_edits", "closed_items", "console_keys", "facts",
                                                         "instructions", "projections", "run_artifacts", "run_lineage", "run_requests", "run_tools", "task_state_versions",
                                                         "transcript_entries")
                                 for kind in ("append_only", "no_truncate")),
                               "credentials_no_truncate", "credentials_revoke_only", "principals_no_delete",
                               "principals_no_truncate"])

    downgrade(url)
    assert current_revision(url) is None
    assert _tables(url) == set()
    assert _scalar_list(url, "SELECT proname FROM pg_proc WHERE proname LIKE 'longrun%'") == []
    assert _scalar_list(url, "SELECT tgname FROM pg_trigger WHERE NOT tgisinternal") == []

    migrate(url)
    assert _tables(url) == TABLES
    with Store.from_url(url) as store:  # and the schema works after the round trip
        store.create_run("again", RunSpec(objective="o", workspace="/tmp"))
        assert store.verify_chain("again").ok
        assert store.get_instruction("again", store.queue_instruction("again", "go on", as_constraint=False)).text \
            == "go on"


def test_0003_down_and_up_again_keeps_the_runs(empty_db_url: str) -> None:
    """Downgrading 0003 drops only the instruction inbox; upgrading brings it back, append-only."""
    url = empty_db_url
    migrate(url)
    with Store.from_url(url) as store:
        store.create_run("kept", RunSpec(objective="o", workspace="/tmp"))
        assert store.queue_instruction("kept", "first", as_constraint=False) == 1

    downgrade(url, "0002")
    assert current_revision(url) == "0002"
    assert _tables(url) == TABLES - {"instructions", "principals", "credentials", "call_edits", "run_artifacts",
                                     "console_keys", "console_sessions", "console_sign_ins", "facts", "closed_items", "run_tools", "run_requests", "run_lineage",
          "model_requests", "budget_raises"}
    assert not [t for t in _scalar_list(url, "SELECT tgname FROM pg_trigger WHERE NOT tgisinternal")
                if t.startswith("instructions")]

    migrate(url)
    assert current_revision(url) == head_revision()
    assert _tables(url) == TABLES
    with Store.from_url(url) as store:
        assert store.verify_chain("kept").ok
        assert store.queue_instruction("kept", "again", as_constraint=True) == 1  # the old row went with the table
        with pytest.raises(AppendOnlyViolation, match="table instructions is append-only: DELETE refused"):
            with store.transaction("delete") as session:
                session.execute(text("DELETE FROM instructions"))


def test_migrate_twice_is_a_noop(empty_db_url: str) -> None:
    migrate(empty_db_url)
    migrate(empty_db_url)
    assert current_revision(empty_db_url) == head_revision()


def test_migration_matches_the_orm_metadata(db_url: str) -> None:
    engine = make_engine(db_url)
    try:
        with engine.connect() as conn:
            diff = compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}), Base.metadata)
    finally:
        engine.dispose()
    assert diff == [], f"tables.py and the migrations disagree: {diff}"


def test_every_constraint_is_named_by_the_convention(db_url: str) -> None:
    names = _scalar_list(db_url, """
        SELECT c.conname FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid
        JOIN pg_namespace n ON n.oid = t.relnamespace
        WHERE n.nspname = 'public' AND t.relname <> 'alembic_version' AND c.contype IN ('p', 'f', 'c', 'u')
    """)
    assert len(names) >= 20
    bad = [n for n in names if not n.startswith(("pk_", "fk_", "ck_", "uq_"))]
    assert bad == []
    doubled = [n for n in names if n.startswith(("ck_ck_", "fk_fk_")) or n.count("_ck_") or len(n) >= 63]
    assert doubled == [], "names must come out exactly as written (op.f), never re-prefixed or truncated"
    assert {"pk_runs", "fk_task_states_run_id_runs", "ck_task_states_version_positive",
            "fk_runs_parent_run_id_runs", "ck_artifacts_size_matches", "pk_instructions",
            "fk_instructions_run_id_runs", "ck_instructions_id_positive", "ck_instructions_text_nonempty"} <= set(names)


def test_0009_moves_the_closed_items_of_existing_runs_out(empty_db_url: str, tmp_path) -> None:
    """A run written before 0009 holds its settled effect and used approval in its state; the
    migration writes a new, chained state version without them and their `closed_items` rows."""
    from datetime import timedelta

    from longrun.models import Approval, Effect, EffectStatus, canonical_json, chain_hash, utcnow
    from longrun.store.chain import state_version_payload

    url = empty_db_url
    migrate(url, "0008")
    store = Store.from_url(url)
    try:
        store.create_run("old", RunSpec(objective="o", workspace=str(tmp_path)))
        head = store.load_state("old")
        now = utcnow()
        settled = Effect(action_id="old/t1/c0", tool="write_file", status=EffectStatus.confirmed, external_id="x",
                         idempotency_key="old/t1/c0")
        used = Approval(id="apr-1", scope="write_file", action_hash="a" * 64, approved_by="alice", approved_at=now,
                        expires_at=now + timedelta(hours=1), used=True)
        payload = head.model_copy(update={"state_version": 2, "updated_at": now, "effects": [settled],
                                          "approvals": [used]}).model_dump(mode="json")
        del payload["closed"]  # as a state written before 0009
        engine = make_engine(url)
        with engine.begin() as conn:  # what a compare-and-set before 0009 wrote
            prev = conn.execute(text("SELECT state_head FROM runs WHERE run_id = 'old'")).scalar_one()
            digest = chain_hash(prev, state_version_payload("old", 2, payload, "ledger", "settle", now))
            conn.execute(text("INSERT INTO task_state_versions VALUES ('old', 2, CAST(:s AS json), 'ledger', 'settle', "
                              ":now, :prev, :hash)"), {"s": canonical_json(payload), "now": now, "prev": prev,
                                                       "hash": digest})
            conn.execute(text("UPDATE task_states SET state_version = 2, state = CAST(:s AS jsonb) WHERE run_id = 'old'"),
                         {"s": canonical_json(payload)})
            conn.execute(text("UPDATE runs SET state_head = :h, state_count = 2 WHERE run_id = 'old'"), {"h": digest})
        engine.dispose()
    finally:
        store.engine.dispose()

    migrate(url)
    store = Store.from_url(url)
    try:
        state = store.load_state("old")
        assert state.state_version == 3 and state.effects == [] and state.approvals == []
        assert (state.closed.effects_confirmed, state.closed.approvals_used, state.closed.count) == (1, 1, 2)
        assert [(r.kind, r.item_id, r.state_version) for r in store.closed_items("old")] == [
            ("effect", "old/t1/c0", 3), ("approval", "apr-1", 3)]
        assert store.state_history("old")[1].state.effects == [settled], "the versions before keep them"
        assert store.verify_chain("old").ok, store.verify_chain("old")
    finally:
        store.engine.dispose()
