"""Closed items: the task state holds what is open, not everything that ever happened (issue 26).

- `closed_items`: one row per item a run's state closed: a settled effect (`confirmed` or `none`),
  a used or long-expired approval, an ended, used-up or long-expired scope, as the state held it.
  One table with a `kind` column rather than one per kind: the three are closed by the same
  compare-and-set, read by the same few lookups (by item id, by action hash), and one chain per
  run keeps one count and one head in the state (`TaskState.closed`) and one check in
  `verify_chain`.
- Append-only and hash-chained per run like the other history tables (trigger; the app role may
  only SELECT and INSERT). The chain's count and head live in the task state, so they move only
  with a compare-and-set, and the state history vouches for them.

Data: every run's latest state has its closed items moved out here, in this migration: a new
state version (actor `migration`, chained on the run's state head like any compare-and-set) and
the rows it closes, in the migration's transaction. Not lazily at the next write: a finished run
is never written again, and `verify_chain`, the gate and every view would otherwise need to
read both shapes forever. The versions before it keep the items, untouched.

Downgrade drops the table, and with it the closed items recorded since; states written since
carry a `closed` field the code before this migration does not parse, so downgrade only a
database with no runs written by this version.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-03
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from longrun.store.roles import app_role_name

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ACTOR = "migration"
REASON = "0009: closed items moved to closed_items"


def upgrade() -> None:
    op.create_table(
        "closed_items",
        sa.Column("run_id", sa.String(200), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("item_id", sa.String(300), nullable=False),
        sa.Column("action_hash", sa.String(64), nullable=True),
        sa.Column("call_ref", sa.String(300), nullable=True),
        sa.Column("item", postgresql.JSON(), nullable=False),
        sa.Column("state_version", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("prev_hash", sa.String(64), nullable=False),
        sa.Column("hash", sa.String(64), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["runs.run_id"], name=op.f("fk_closed_items_run_id_runs")),
        sa.PrimaryKeyConstraint("run_id", "seq", name=op.f("pk_closed_items")),
        sa.CheckConstraint("seq >= 1", name=op.f("ck_closed_items_seq_positive")),
        sa.CheckConstraint("kind IN ('effect', 'approval', 'scope')", name=op.f("ck_closed_items_kind_known")),
    )
    op.create_index("ix_closed_items_run_id_item_id", "closed_items", ["run_id", "item_id"])
    op.create_index("ix_closed_items_run_id_action_hash", "closed_items", ["run_id", "action_hash"])
    op.execute("CREATE TRIGGER closed_items_append_only BEFORE UPDATE OR DELETE ON closed_items "
               "FOR EACH ROW EXECUTE FUNCTION longrun_refuse_change()")
    op.execute("CREATE TRIGGER closed_items_no_truncate BEFORE TRUNCATE ON closed_items "
               "FOR EACH STATEMENT EXECUTE FUNCTION longrun_refuse_change()")
    role = app_role_name()
    op.execute(f"REVOKE ALL ON closed_items FROM {role}")
    op.execute(f"GRANT SELECT, INSERT ON closed_items TO {role}")
    move_closed_items(op.get_bind())


def move_closed_items(conn: sa.Connection) -> int:
    """Move the closed items of every run's latest state out (see the module docstring).

    Returns:
        How many runs got a new state version."""
    from longrun.models import TaskState, canonical_json, chain_hash, utcnow
    from longrun.store.chain import state_version_payload
    from longrun.store.closing import seal, split_closed

    moved = 0
    rows = conn.execute(sa.text(
        "SELECT t.run_id, t.state, t.state_version, r.state_head FROM task_states t "
        "JOIN runs r ON r.run_id = t.run_id ORDER BY t.run_id FOR UPDATE OF t, r")).all()
    for run_id, data, version, head in rows:
        state = TaskState.model_validate(data)
        now = utcnow()
        open_state, items = split_closed(state, now)
        if not items:
            continue
        new_version = version + 1
        stored, sealed = seal(run_id, open_state, items, new_version, now)
        stored = stored.model_copy(update={"state_version": new_version, "updated_at": now})
        payload = stored.model_dump(mode="json")
        digest = chain_hash(head, state_version_payload(run_id, new_version, payload, ACTOR, REASON, now))
        for s in sealed:
            conn.execute(sa.text(
                "INSERT INTO closed_items (run_id, seq, kind, item_id, action_hash, call_ref, item, state_version, "
                "created_at, prev_hash, hash) VALUES (:run_id, :seq, :kind, :item_id, :action_hash, :call_ref, "
                "CAST(:item AS json), :version, :now, :prev, :hash)"), {
                "run_id": run_id, "seq": s.seq, "kind": s.item.kind, "item_id": s.item.item_id,
                "action_hash": s.item.action_hash, "call_ref": s.item.call_ref, "item": s.item_text,
                "version": new_version, "now": now, "prev": s.prev_hash, "hash": s.hash})
        text = canonical_json(payload)
        conn.execute(sa.text(
            "INSERT INTO task_state_versions (run_id, version, state, actor, reason, created_at, prev_hash, hash) "
            "VALUES (:run_id, :version, CAST(:state AS json), :actor, :reason, :now, :prev, :hash)"), {
            "run_id": run_id, "version": new_version, "state": text, "actor": ACTOR, "reason": REASON,
            "now": now, "prev": head, "hash": digest})
        conn.execute(sa.text(
            "UPDATE task_states SET state_version = :version, state = CAST(:state AS jsonb), updated_at = :now "
            "WHERE run_id = :run_id"), {"run_id": run_id, "version": new_version, "state": text, "now": now})
        conn.execute(sa.text("UPDATE runs SET state_head = :hash, state_count = :version WHERE run_id = :run_id"),
                     {"run_id": run_id, "version": new_version, "hash": digest})
        moved += 1
    return moved


def downgrade() -> None:
    op.drop_table("closed_items")
