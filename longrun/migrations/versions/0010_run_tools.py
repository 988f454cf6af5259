"""run_tools: the tools each run was offered at its start (issue 27).

One row per tool (built-in, custom or MCP): its kind, whether it needs approval, its input schema,
the arguments it declares as a path and a content, and `schema_sha256`, the hash of all of that
(`longrun.tools.recorded.schema_sha256`). A worker runs a call only with a tool of the same hash,
and clients validate scopes, edits and diffs against these rows instead of their own registry.
The hash of the whole list is in the task state (`tools_sha256`).

Append-only, like the other history tables (trigger, and the app role may only SELECT and INSERT).
Backfill: none. Runs started before have no rows and keep the worker's registry, as before.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-05
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from longrun.store.roles import app_role_name

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "run_tools",
        sa.Column("run_id", sa.String(200), nullable=False),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("source", sa.String(8), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("needs_approval", sa.Boolean(), nullable=False),
        sa.Column("schema_sha256", sa.String(64), nullable=False),
        sa.Column("input_schema", postgresql.JSONB(), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("path_arg", sa.String(200), nullable=True),
        sa.Column("content_arg", sa.String(200), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["runs.run_id"], name=op.f("fk_run_tools_run_id_runs")),
        sa.PrimaryKeyConstraint("run_id", "name", name=op.f("pk_run_tools")),
        sa.CheckConstraint("source IN ('builtin', 'custom', 'mcp')", name=op.f("ck_run_tools_source_known")),
    )
    op.execute("CREATE TRIGGER run_tools_append_only BEFORE UPDATE OR DELETE ON run_tools "
               "FOR EACH ROW EXECUTE FUNCTION longrun_refuse_change()")
    op.execute("CREATE TRIGGER run_tools_no_truncate BEFORE TRUNCATE ON run_tools "
               "FOR EACH STATEMENT EXECUTE FUNCTION longrun_refuse_change()")
    role = app_role_name()
    op.execute(f"REVOKE ALL ON run_tools FROM {role}")
    op.execute(f"GRANT SELECT, INSERT ON run_tools TO {role}")


def downgrade() -> None:
    op.drop_table("run_tools")
