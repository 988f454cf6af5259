"""run_requests: runs asked for over HTTP (`POST /api/runs`, issue 27), and refused asks.

A started request holds the caller's `Idempotency-Key`, the SHA-256 of its body and the run id it
was given; the unique (principal, idempotency_key) makes a retry, or a concurrent twin, find the
first row and its run instead of starting a second. A refused request (wrong role, bad spec, body
too large) is a row with outcome `refused`, no key and the reason, so the refusal is audited under
the principal's name though there is no run to audit it in.

Append-only (trigger, and the app role may only SELECT and INSERT). Backfill: none.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-06
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from longrun.store.roles import app_role_name

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "run_requests",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("principal", sa.String(100), nullable=False),
        sa.Column("outcome", sa.String(8), nullable=False),
        sa.Column("idempotency_key", sa.String(200), nullable=True),
        sa.Column("request_sha256", sa.String(64), nullable=True),
        sa.Column("run_id", sa.String(200), nullable=True),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_run_requests")),
        sa.UniqueConstraint("principal", "idempotency_key", name=op.f("uq_run_requests_principal")),
        sa.CheckConstraint("outcome IN ('started', 'refused')", name=op.f("ck_run_requests_outcome_known")),
        sa.CheckConstraint("(outcome = 'started') = (idempotency_key IS NOT NULL AND request_sha256 IS NOT NULL "
                           "AND run_id IS NOT NULL)", name=op.f("ck_run_requests_started_has_key")),
    )
    op.execute("CREATE TRIGGER run_requests_append_only BEFORE UPDATE OR DELETE ON run_requests "
               "FOR EACH ROW EXECUTE FUNCTION longrun_refuse_change()")
    op.execute("CREATE TRIGGER run_requests_no_truncate BEFORE TRUNCATE ON run_requests "
               "FOR EACH STATEMENT EXECUTE FUNCTION longrun_refuse_change()")
    role = app_role_name()
    op.execute(f"REVOKE ALL ON run_requests FROM {role}")
    op.execute(f"GRANT SELECT, INSERT ON run_requests TO {role}")


def downgrade() -> None:
    op.drop_table("run_requests")
