"""Instruction inbox: what a human tells a run with `say`, stored before the workflow hears of it.

The client writes the (redacted) text here and the workflow update carries only
`(run_id, instruction_id)`, so the text never travels through Temporal or its history.
`instruction_id` numbers a run's instructions 1, 2, ..., allocated by the store under the `runs`
row lock like transcript and audit numbers; the primary key (run_id, instruction_id) means an id
is always looked up together with its run.

The table is append-only like the history tables: the trigger function from 0001 refuses UPDATE,
DELETE and TRUNCATE with SQLSTATE LR001, and the app role from 0002 gets SELECT and INSERT only.
Downgrade drops the table (its triggers and grants go with it).

Revision ID: 0003
Revises: 0002
Create Date: 2025-01-03
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from longrun.store.roles import app_role_name

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLE = "instructions"


def upgrade() -> None:
    op.create_table(
        TABLE,
        sa.Column("run_id", sa.String(200), nullable=False),
        sa.Column("instruction_id", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("as_constraint", sa.Boolean(), nullable=False),
        sa.Column("actor", sa.String(200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint("instruction_id >= 1", name=op.f("ck_instructions_id_positive")),
        sa.CheckConstraint("text <> ''", name=op.f("ck_instructions_text_nonempty")),
        sa.ForeignKeyConstraint(["run_id"], ["runs.run_id"], name=op.f("fk_instructions_run_id_runs")),
        sa.PrimaryKeyConstraint("run_id", "instruction_id", name=op.f("pk_instructions")),
    )
    op.execute(
        f"CREATE TRIGGER {TABLE}_append_only BEFORE UPDATE OR DELETE ON {TABLE} "
        f"FOR EACH ROW EXECUTE FUNCTION longrun_refuse_change()"
    )
    op.execute(
        f"CREATE TRIGGER {TABLE}_no_truncate BEFORE TRUNCATE ON {TABLE} "
        f"FOR EACH STATEMENT EXECUTE FUNCTION longrun_refuse_change()"
    )
    role = app_role_name()
    op.execute(f"REVOKE ALL ON {TABLE} FROM {role}")
    op.execute(f"GRANT SELECT, INSERT ON {TABLE} TO {role}")


def downgrade() -> None:
    op.drop_table(TABLE)
