"""run_lineage: forks (`longrun fork`, issue 29). One row per fork: the run it was made from, the
state version it starts at, the last transcript entry of the parent it reads by reference (the
fork's own entries continue the numbering after it), and the commit its git branch started from.

Append-only (trigger, and the app role may only SELECT and INSERT): a run's parentage is part of
its record. Backfill: none (no run before this migration is a fork).

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from longrun.store.roles import app_role_name

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "run_lineage",
        sa.Column("run_id", sa.String(200), nullable=False),
        sa.Column("parent_run_id", sa.String(200), nullable=False),
        sa.Column("parent_version", sa.Integer(), nullable=False),
        sa.Column("parent_through_seq", sa.Integer(), nullable=False),
        sa.Column("parent_commit", sa.String(64), nullable=True),
        sa.Column("created_by", sa.String(200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.PrimaryKeyConstraint("run_id", name=op.f("pk_run_lineage")),
        sa.ForeignKeyConstraint(["run_id"], ["runs.run_id"], name=op.f("fk_run_lineage_run_id_runs")),
        sa.ForeignKeyConstraint(["parent_run_id"], ["runs.run_id"], name=op.f("fk_run_lineage_parent_run_id_runs")),
        sa.CheckConstraint("parent_version >= 1", name=op.f("ck_run_lineage_version_positive")),
        sa.CheckConstraint("parent_through_seq >= 0", name=op.f("ck_run_lineage_through_nonnegative")),
        sa.CheckConstraint("run_id <> parent_run_id", name=op.f("ck_run_lineage_not_own_parent")),
    )
    op.create_index(op.f("ix_run_lineage_parent_run_id"), "run_lineage", ["parent_run_id"])
    op.execute("CREATE TRIGGER run_lineage_append_only BEFORE UPDATE OR DELETE ON run_lineage "
               "FOR EACH ROW EXECUTE FUNCTION longrun_refuse_change()")
    op.execute("CREATE TRIGGER run_lineage_no_truncate BEFORE TRUNCATE ON run_lineage "
               "FOR EACH STATEMENT EXECUTE FUNCTION longrun_refuse_change()")
    role = app_role_name()
    op.execute(f"REVOKE ALL ON run_lineage FROM {role}")
    op.execute(f"GRANT SELECT, INSERT ON run_lineage TO {role}")


def downgrade() -> None:
    op.drop_table("run_lineage")
