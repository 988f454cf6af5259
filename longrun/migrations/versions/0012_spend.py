"""model_requests and budget_raises: the spend ledger (issue 28).

`model_requests` holds one row per request to a model, keyed per turn, overflow retry and
activity attempt: `sent` before the provider is called (so a request whose answer a crash lost is
still seen, at its input estimate), `answered` with the provider's usage and its cost in dollars
(NULL with `priced` false: the model has no price, never $0). `root_run_id` names the run family
(a subagent's spend is its root's). `budget_raises` holds each signed raise of a family's budget,
once per budget request.

The app role may SELECT, INSERT and UPDATE `model_requests` (a sent row becomes answered), and
only SELECT and INSERT `budget_raises`. Backfill: none (runs before this have no ledger rows).

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from longrun.store.roles import app_role_name

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

DOLLARS = sa.Numeric(18, 9)


def upgrade() -> None:
    op.create_table(
        "model_requests",
        sa.Column("run_id", sa.String(200), nullable=False),
        sa.Column("turn", sa.Integer(), nullable=False),
        sa.Column("overflow_retry", sa.Integer(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("root_run_id", sa.String(200), nullable=False),
        sa.Column("model", sa.String(500), nullable=False),
        sa.Column("status", sa.String(8), nullable=False),
        sa.Column("usage", sa.JSON(), nullable=True),
        sa.Column("cost_usd", DOLLARS, nullable=True),
        sa.Column("priced", sa.Boolean(), nullable=False),
        sa.Column("transcript_seq", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("answered_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["run_id"], ["runs.run_id"], name=op.f("fk_model_requests_run_id_runs")),
        sa.PrimaryKeyConstraint("run_id", "turn", "overflow_retry", "attempt", name=op.f("pk_model_requests")),
        sa.CheckConstraint("status IN ('sent', 'answered', 'failed')", name=op.f("ck_model_requests_status_known")),
        sa.CheckConstraint("priced OR cost_usd IS NULL", name=op.f("ck_model_requests_unpriced_has_no_cost")),
    )
    op.create_index(op.f("ix_model_requests_root_run_id"), "model_requests", ["root_run_id"])
    op.create_table(
        "budget_raises",
        sa.Column("root_run_id", sa.String(200), nullable=False),
        sa.Column("request_id", sa.String(100), nullable=False),
        sa.Column("run_id", sa.String(200), nullable=False),
        sa.Column("by_usd", DOLLARS, nullable=False),
        sa.Column("approver", sa.String(100), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.ForeignKeyConstraint(["root_run_id"], ["runs.run_id"], name=op.f("fk_budget_raises_root_run_id_runs")),
        sa.PrimaryKeyConstraint("root_run_id", "request_id", name=op.f("pk_budget_raises")),
        sa.CheckConstraint("by_usd > 0", name=op.f("ck_budget_raises_positive")),
    )
    op.execute("CREATE TRIGGER budget_raises_append_only BEFORE UPDATE OR DELETE ON budget_raises "
               "FOR EACH ROW EXECUTE FUNCTION longrun_refuse_change()")
    op.execute("CREATE TRIGGER budget_raises_no_truncate BEFORE TRUNCATE ON budget_raises "
               "FOR EACH STATEMENT EXECUTE FUNCTION longrun_refuse_change()")
    role = app_role_name()
    op.execute(f"REVOKE ALL ON model_requests FROM {role}")
    op.execute(f"GRANT SELECT, INSERT, UPDATE ON model_requests TO {role}")
    op.execute(f"REVOKE ALL ON budget_raises FROM {role}")
    op.execute(f"GRANT SELECT, INSERT ON budget_raises TO {role}")


def downgrade() -> None:
    op.drop_table("budget_raises")
    op.drop_index(op.f("ix_model_requests_root_run_id"), table_name="model_requests")
    op.drop_table("model_requests")
