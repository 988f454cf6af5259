"""Initial schema: runs, task state (head + versions), transcript, artifacts, projections, audit.

Append-only tables get a trigger that refuses UPDATE, DELETE and TRUNCATE with SQLSTATE LR001.

Revision ID: 0001
Revises:
Create Date: 2025-01-01
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

GENESIS = "0" * 64
APPEND_ONLY = ("task_state_versions", "transcript_entries", "projections", "audit_events")


def _created_at() -> sa.Column[Any]:
    return sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False)


def _run_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(["run_id"], ["runs.run_id"], name=op.f(f"fk_{table}_run_id_runs"))


def upgrade() -> None:
    op.create_table(
        "runs",
        sa.Column("run_id", sa.String(200), nullable=False),
        sa.Column("spec", postgresql.JSONB(), nullable=False),
        sa.Column("model", sa.String(300), nullable=False),
        sa.Column("status", sa.String(40), nullable=False),
        sa.Column("reason", sa.Text(), server_default="", nullable=False),
        sa.Column("parent_run_id", sa.String(200), nullable=True),
        sa.Column("calibration", postgresql.JSONB(), server_default=sa.text("'{}'::jsonb"), nullable=False),
        sa.Column("state_head", sa.String(64), server_default=GENESIS, nullable=False),
        sa.Column("state_count", sa.Integer(), server_default="0", nullable=False),
        sa.Column("transcript_head", sa.String(64), server_default=GENESIS, nullable=False),
        sa.Column("transcript_count", sa.Integer(), server_default="0", nullable=False),
        sa.Column("audit_head", sa.String(64), server_default=GENESIS, nullable=False),
        sa.Column("audit_count", sa.Integer(), server_default="0", nullable=False),
        _created_at(),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint(
            "status IN ('running', 'waiting_approval', 'paused', 'completed', 'failed', 'cancelled')",
            name=op.f("ck_runs_status_known"),
        ),
        sa.CheckConstraint("run_id <> ''", name=op.f("ck_runs_run_id_nonempty")),
        sa.ForeignKeyConstraint(["parent_run_id"], ["runs.run_id"], name=op.f("fk_runs_parent_run_id_runs")),
        sa.PrimaryKeyConstraint("run_id", name=op.f("pk_runs")),
    )
    op.create_index(op.f("ix_runs_parent_run_id"), "runs", ["parent_run_id"])

    op.create_table(
        "task_states",
        sa.Column("run_id", sa.String(200), nullable=False),
        sa.Column("state_version", sa.Integer(), nullable=False),
        sa.Column("state", postgresql.JSONB(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint("state_version >= 1", name=op.f("ck_task_states_version_positive")),
        _run_fk("task_states"),
        sa.PrimaryKeyConstraint("run_id", name=op.f("pk_task_states")),
    )

    op.create_table(
        "task_state_versions",
        sa.Column("run_id", sa.String(200), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("state", postgresql.JSON(), nullable=False),
        sa.Column("actor", sa.String(200), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        _created_at(),
        sa.Column("prev_hash", sa.String(64), nullable=False),
        sa.Column("hash", sa.String(64), nullable=False),
        sa.CheckConstraint("version >= 1", name=op.f("ck_task_state_versions_version_positive")),
        _run_fk("task_state_versions"),
        sa.PrimaryKeyConstraint("run_id", "version", name=op.f("pk_task_state_versions")),
    )

    op.create_table(
        "transcript_entries",
        sa.Column("run_id", sa.String(200), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("role", sa.String(20), nullable=False),
        sa.Column("content", postgresql.JSON(), nullable=False),
        sa.Column("token_estimate", sa.Integer(), nullable=False),
        sa.Column("usage", postgresql.JSON(), nullable=True),
        sa.Column("turn", sa.Integer(), nullable=True),
        _created_at(),
        sa.Column("prev_hash", sa.String(64), nullable=False),
        sa.Column("hash", sa.String(64), nullable=False),
        sa.CheckConstraint("seq >= 1", name=op.f("ck_transcript_entries_seq_positive")),
        sa.CheckConstraint("role IN ('user', 'assistant')", name=op.f("ck_transcript_entries_role_known")),
        sa.CheckConstraint("token_estimate >= 0", name=op.f("ck_transcript_entries_token_estimate_nonnegative")),
        _run_fk("transcript_entries"),
        sa.PrimaryKeyConstraint("run_id", "seq", name=op.f("pk_transcript_entries")),
    )

    op.create_table(
        "artifacts",
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.Column("media_type", sa.String(200), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        _created_at(),
        sa.CheckConstraint("size = octet_length(data)", name=op.f("ck_artifacts_size_matches")),
        sa.CheckConstraint("sha256 ~ '^[0-9a-f]{64}$'", name=op.f("ck_artifacts_sha256_hex")),
        sa.PrimaryKeyConstraint("sha256", name=op.f("pk_artifacts")),
    )

    op.create_table(
        "projections",
        sa.Column("run_id", sa.String(200), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("base_state_version", sa.Integer(), nullable=False),
        sa.Column("covers_through_seq", sa.Integer(), nullable=False),
        sa.Column("content", postgresql.JSONB(), nullable=False),
        sa.Column("report", postgresql.JSONB(), nullable=False),
        _created_at(),
        sa.CheckConstraint("version >= 1", name=op.f("ck_projections_version_positive")),
        sa.CheckConstraint("covers_through_seq >= 0", name=op.f("ck_projections_covers_nonnegative")),
        _run_fk("projections"),
        sa.PrimaryKeyConstraint("run_id", "version", name=op.f("pk_projections")),
    )

    op.create_table(
        "audit_events",
        sa.Column("run_id", sa.String(200), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(60), nullable=False),
        sa.Column("event", postgresql.JSON(), nullable=False),
        sa.Column("actor", sa.String(200), nullable=False),
        _created_at(),
        sa.Column("prev_hash", sa.String(64), nullable=False),
        sa.Column("hash", sa.String(64), nullable=False),
        sa.CheckConstraint("seq >= 1", name=op.f("ck_audit_events_seq_positive")),
        _run_fk("audit_events"),
        sa.PrimaryKeyConstraint("run_id", "seq", name=op.f("pk_audit_events")),
    )

    op.execute(
        """
        CREATE FUNCTION longrun_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            RAISE EXCEPTION 'table % is append-only: % refused', TG_TABLE_NAME, TG_OP
                USING ERRCODE = 'LR001',
                      HINT = 'history is never rewritten; append a new row instead';
        END
        $$
        """
    )
    for table in APPEND_ONLY:
        op.execute(
            f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
            f"FOR EACH ROW EXECUTE FUNCTION longrun_refuse_change()"
        )
        op.execute(
            f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table} "
            f"FOR EACH STATEMENT EXECUTE FUNCTION longrun_refuse_change()"
        )


def downgrade() -> None:
    for table in ("audit_events", "projections", "artifacts", "transcript_entries", "task_state_versions",
                  "task_states"):
        op.drop_table(table)
    op.drop_index("ix_runs_parent_run_id", table_name="runs")
    op.drop_table("runs")
    op.execute("DROP FUNCTION IF EXISTS longrun_refuse_change()")
