"""The fact store: every fact a run's transcript stated, one row each (issue 25).

- `facts`: one row per fact unit a compaction read from the transcript (or a task-state note the
  state block no longer shows): its kind (rule, decision, value, status, preference), who said it
  (user, agent, tool, note), its subject (names and content words, values and type labels aside),
  its values, the line verbatim (redacted like the projection) and the transcript entry it came
  from. A compaction *selects* from the current rows what the projection shows; nothing is
  dropped from here, so a fact left out once can be shown at the next compaction.
- Append-only, enforced like the other history tables (trigger, and the app role may only SELECT
  and INSERT): a row that replaces others names them in `supersedes`; a row's status (current,
  superseded) is read from the rows after it, never written. That way no compaction, bug or
  injected text can rewrite or delete what a run was told; an UPDATE of a status column would be
  one more way to make a fact vanish.
- Rows are written in the same transaction as the projection that added them, so a stale
  projection leaves none behind.

Backfill: none is written here. A run whose store is empty (every run before this migration)
has its facts extracted from its transcript, everything up to what its next compaction
summarizes, at that compaction: the transcript is the source of truth and is never modified,
so the store it yields is more complete than the ledger lines the old projections kept (those
held only what their budget selected). Old projections are still parsed as before.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from longrun.store.roles import app_role_name

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "facts",
        sa.Column("run_id", sa.String(200), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("source_seq", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("source", sa.String(8), nullable=False),
        sa.Column("subject", sa.Text(), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("where_call", sa.Text(), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.Column("final", sa.Boolean(), nullable=False),
        sa.Column("rejected", sa.Boolean(), nullable=False),
        sa.Column("quoted", sa.Boolean(), nullable=False),
        sa.Column("supersedes", postgresql.ARRAY(sa.Integer()), nullable=False),
        sa.Column("projection_version", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["runs.run_id"], name=op.f("fk_facts_run_id_runs")),
        sa.PrimaryKeyConstraint("run_id", "seq", name=op.f("pk_facts")),
        sa.CheckConstraint("seq >= 1", name=op.f("ck_facts_seq_positive")),
        sa.CheckConstraint("source_seq >= 0", name=op.f("ck_facts_source_seq_nonnegative")),
        sa.CheckConstraint("kind IN ('rule', 'decision', 'value', 'status', 'preference')", name=op.f("ck_facts_kind_known")),
        sa.CheckConstraint("source IN ('user', 'agent', 'tool', 'note')", name=op.f("ck_facts_source_known")),
    )
    op.execute("CREATE TRIGGER facts_append_only BEFORE UPDATE OR DELETE ON facts "
               "FOR EACH ROW EXECUTE FUNCTION longrun_refuse_change()")
    op.execute("CREATE TRIGGER facts_no_truncate BEFORE TRUNCATE ON facts "
               "FOR EACH STATEMENT EXECUTE FUNCTION longrun_refuse_change()")
    role = app_role_name()
    op.execute(f"REVOKE ALL ON facts FROM {role}")
    op.execute(f"GRANT SELECT, INSERT ON facts TO {role}")


def downgrade() -> None:
    op.drop_table("facts")
