"""Which run stored which artifact: `read_artifact` resolves only within a run's family.

Artifacts are content-addressed and global (`artifacts`, one row per sha256), so before this any
run could read any other run's output from a 12-hex prefix, and those prefixes appear in audit
logs. `run_artifacts` links a run to each artifact it stored (a tool result, a subagent's answer);
`read_artifact` looks a reference up only among the artifacts of the run, its parent and its
children. The bytes stay stored once; two runs that stored the same bytes each have a link.

Existing artifacts are linked from the `tool_ran` audit events that name them (every stored tool
result has one), so runs recorded before this migration keep reading their own.

Append-only like the history tables: the trigger function from 0001 refuses UPDATE, DELETE and
TRUNCATE with SQLSTATE LR001, and the app role from 0002 gets SELECT and INSERT only. Downgrade
drops the table (its triggers and grants go with it).

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from longrun.store.roles import app_role_name

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLE = "run_artifacts"


def upgrade() -> None:
    op.create_table(
        TABLE,
        sa.Column("run_id", sa.String(200), nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["runs.run_id"], name=op.f("fk_run_artifacts_run_id_runs")),
        sa.ForeignKeyConstraint(["sha256"], ["artifacts.sha256"], name=op.f("fk_run_artifacts_sha256_artifacts")),
        sa.PrimaryKeyConstraint("run_id", "sha256", name=op.f("pk_run_artifacts")),
    )
    # prefix look-ups go by hash first (the primary key serves look-ups by run)
    op.create_index(op.f("ix_run_artifacts_sha256"), TABLE, ["sha256"])
    op.execute(
        f"CREATE TRIGGER {TABLE}_append_only BEFORE UPDATE OR DELETE ON {TABLE} "
        f"FOR EACH ROW EXECUTE FUNCTION longrun_refuse_change()"
    )
    op.execute(
        f"CREATE TRIGGER {TABLE}_no_truncate BEFORE TRUNCATE ON {TABLE} "
        f"FOR EACH STATEMENT EXECUTE FUNCTION longrun_refuse_change()"
    )
    op.execute(
        f"""
        INSERT INTO {TABLE} (run_id, sha256, created_at)
        SELECT e.run_id, e.event->>'artifact_sha256', min(e.created_at)
        FROM audit_events e JOIN artifacts a ON a.sha256 = e.event->>'artifact_sha256'
        WHERE e.kind = 'tool_ran'
        GROUP BY e.run_id, e.event->>'artifact_sha256'
        """
    )
    role = app_role_name()
    op.execute(f"REVOKE ALL ON {TABLE} FROM {role}")
    op.execute(f"GRANT SELECT, INSERT ON {TABLE} TO {role}")


def downgrade() -> None:
    op.drop_table(TABLE)
