"""Tamper evidence: the three hash chains verify on clean history; a past row altered or a tail
deleted behind the store's back (as superuser, trigger disabled) is detected and named; and the
append-only tables refuse UPDATE, DELETE and TRUNCATE."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import text

from longrun.errors import AppendOnlyViolation, ChainBroken
from longrun.models import CompactionReport, Effect, EffectStatus, Message, Projection, RunSpec, TaskState, Usage
from longrun.models.audit import ToolRan
from longrun.models.context import FactRow
from longrun.models.tools import RecordedTool
from longrun.store import APPEND_ONLY_TABLES, Store

NUMBER_COLUMN = {"task_state_versions": "version", "transcript_entries": "seq", "audit_events": "seq",
                 "projections": "version"}


@pytest.fixture
def history(store: Store) -> Iterator[Store]:
    """A run with 4 state versions (the last closes an effect: 1 closed item), 4 transcript entries,
    4 audit events, 1 projection and the fact it added, 1 queued instruction, 1 artifact it stored and its recorded tool list (a row in every
    append-only table)."""
    store.create_run("r", RunSpec(objective="audit me", constraints=["no network"], workspace="/tmp/ws"))
    settled = Effect(action_id="r/t1/c0", tool="write_file", status=EffectStatus.confirmed, external_id="x",
                     idempotency_key="r/t1/c0")  # closed as it is written: a row of closed_items

    def step(s: TaskState, i: int) -> None:
        s.notes.append(f"note {i}")
        if i == 2:
            s.effects.append(settled)

    for i in range(3):
        store.update_state("r", i + 1, lambda s, i=i: step(s, i), actor="agent", reason=f"step {i}")
    for i in range(4):
        store.append_transcript("r", Message.user_text(f"message {i}"), token_estimate=3 + i,
                                usage=Usage(input_tokens=i) if i % 2 else None, turn=i)
    for i in range(3):
        store.append_audit("r", ToolRan(tool="read_file", call_id=f"c{i}", is_error=False), actor="tool")
    store.save_projection(
        "r",
        Projection(version=1, base_state_version=4, covers_through_seq=2, summary="s", messages=[],
                   report=CompactionReport(trigger="threshold"),
                   new_facts=[FactRow(seq=1, source_seq=1, kind="rule", source="user", subject="message",
                                      text="never touch message 0")]),
        expected_state_version=4,
    )
    store.queue_instruction("r", "keep the public API", as_constraint=True)
    store.put_artifact(b"tool output", run_id="r")
    store.record_run_tools("r", [RecordedTool(name="read_file", source="builtin", kind="read", needs_approval=False,
                                              schema_sha256="0" * 64, input_schema={"type": "object"},
                                              description="read a file")])
    yield store


def _as_superuser(store: Store, table: str, sql: str) -> None:
    """Do what an attacker with the database password could: switch the guard off, edit, switch it on."""
    with store.engine.begin() as conn:
        conn.execute(text(f"ALTER TABLE {table} DISABLE TRIGGER {table}_append_only"))
        conn.execute(text(sql))
        conn.execute(text(f"ALTER TABLE {table} ENABLE TRIGGER {table}_append_only"))


def test_clean_history_verifies(history: Store) -> None:
    verdict = history.verify_chain("r")
    assert verdict.ok and bool(verdict)
    assert (verdict.table, verdict.row) == (None, None)
    assert str(verdict) == (
        "run r: hash chains verify (4 state versions, 4 transcript entries, 4 audit events, 1 closed items)")
    verdict.raise_if_broken()


@pytest.mark.parametrize(
    ("table", "edit"),
    [
        ("task_state_versions", "UPDATE task_state_versions SET reason = 'nothing to see' WHERE version = 2"),
        ("task_state_versions",
         """UPDATE task_state_versions SET state = replace(state::text, 'note 0', 'note zero')::json
            WHERE version = 2"""),
        ("transcript_entries", "UPDATE transcript_entries SET token_estimate = 999 WHERE seq = 2"),
        ("transcript_entries",
         """UPDATE transcript_entries SET content = replace(content::text, 'message 1', 'APPROVED by alice')::json
            WHERE seq = 2"""),
        ("audit_events", "UPDATE audit_events SET actor = 'alice' WHERE seq = 2"),
        ("audit_events", "UPDATE audit_events SET created_at = created_at - interval '1 day' WHERE seq = 2"),
    ],
)
def test_altered_past_row_is_detected_and_named(history: Store, table: str, edit: str) -> None:
    _as_superuser(history, table, edit + " AND run_id = 'r'")

    verdict = history.verify_chain("r")
    assert not verdict.ok
    assert (verdict.table, verdict.row) == (table, 2)
    assert "altered after it was written" in verdict.reason
    assert str(verdict).startswith(f"run r: hash chain broken in {table} at row 2: content does not match")
    with pytest.raises(ChainBroken, match=f"{table} at row 2"):
        verdict.raise_if_broken()


@pytest.mark.parametrize("table", ["task_state_versions", "transcript_entries", "audit_events"])
def test_deleted_tail_is_detected_against_the_stored_head(history: Store, table: str) -> None:
    col = NUMBER_COLUMN[table]
    _as_superuser(history, table, f"DELETE FROM {table} WHERE run_id = 'r' AND {col} = 4")

    verdict = history.verify_chain("r")
    assert not verdict.ok
    assert (verdict.table, verdict.row) == (table, 4)
    assert "ends after row 3 but 4 rows were written" in verdict.reason
    assert "deleted from the tail" in str(verdict)


@pytest.mark.parametrize("table", ["task_state_versions", "transcript_entries", "audit_events"])
def test_deleted_middle_row_is_detected(history: Store, table: str) -> None:
    col = NUMBER_COLUMN[table]
    _as_superuser(history, table, f"DELETE FROM {table} WHERE run_id = 'r' AND {col} = 2")

    verdict = history.verify_chain("r")
    assert (verdict.ok, verdict.table, verdict.row) == (False, table, 2)
    assert "row 2 is missing" in verdict.reason


def test_rehashed_forgery_is_caught_by_the_next_link_or_the_head(history: Store) -> None:
    """An attacker who rewrites a row *and* recomputes its hash still breaks the next row's link."""
    from longrun.models import chain_hash
    from longrun.store.chain import audit_payload

    with history.engine.connect() as conn:
        row = conn.execute(text("SELECT * FROM audit_events WHERE run_id = 'r' AND seq = 2")).mappings().one()
    forged = chain_hash(row["prev_hash"], audit_payload("r", 2, row["kind"], row["event"], "mallory", row["created_at"]))
    _as_superuser(history, "audit_events",
                  f"UPDATE audit_events SET actor = 'mallory', hash = '{forged}' WHERE run_id = 'r' AND seq = 2")

    verdict = history.verify_chain("r")
    assert (verdict.ok, verdict.table, verdict.row) == (False, "audit_events", 3)
    assert "does not match the hash of the row before" in verdict.reason


def test_head_state_edited_outside_cas_is_detected(history: Store) -> None:
    with history.engine.begin() as conn:
        conn.execute(text("""UPDATE task_states SET state = jsonb_set(state, '{next_action}', '"stop"')
                             WHERE run_id = 'r'"""))
    verdict = history.verify_chain("r")
    assert (verdict.ok, verdict.table, verdict.row) == (False, "task_states", 4)
    assert "changed outside compare-and-set" in verdict.reason


def test_appends_after_verification_still_verify(history: Store) -> None:
    assert history.verify_chain("r").ok
    history.append_audit("r", ToolRan(tool="grep", call_id="late", is_error=False))
    history.append_transcript("r", Message.user_text("late"), token_estimate=1)
    assert history.verify_chain("r").ok


@pytest.mark.parametrize("table", APPEND_ONLY_TABLES)
@pytest.mark.parametrize(
    ("op", "sql"),
    [
        ("UPDATE", "UPDATE {table} SET created_at = now() WHERE run_id = 'r'"),
        ("DELETE", "DELETE FROM {table} WHERE run_id = 'r'"),
        ("TRUNCATE", "TRUNCATE {table}"),
    ],
)
def test_append_only_tables_refuse_update_delete_truncate(history: Store, table: str, op: str, sql: str) -> None:
    with history.engine.connect() as conn:
        before = conn.execute(text(f"SELECT count(*) FROM {table}")).scalar_one()
    assert before >= 1

    with pytest.raises(AppendOnlyViolation, match=f"table {table} is append-only: {op} refused") as info:
        with history.transaction(f"{op} on {table}") as session:
            session.execute(text(sql.format(table=table)))
    assert "append a new row instead" in str(info.value)

    with history.engine.connect() as conn:
        assert conn.execute(text(f"SELECT count(*) FROM {table}")).scalar_one() == before
    assert history.verify_chain("r").ok


def test_raw_sql_sees_the_trigger_message(history: Store) -> None:
    """Outside the store (psql, another service) the refusal carries the same message."""
    import psycopg

    url = history.engine.url.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(url) as conn:
        with pytest.raises(psycopg.Error, match="table audit_events is append-only: DELETE refused") as info:
            conn.execute("DELETE FROM audit_events")
        assert info.value.sqlstate == "LR001"
