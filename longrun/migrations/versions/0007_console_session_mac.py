"""Console sessions carry a MAC; sign-in attempts are recorded before the password is tried.

- `console_sessions.mac`: HMAC-SHA256, under a key only the console holds
  (`longrun.console.session_mac`), over the token's hash, principal, key id, created and expiry
  times. The app role may still write the table (the console signs people in with its URL), but a
  row it writes or changes has no valid MAC and signs no one in. Sessions from before this
  revision have none: their people sign in again.
- `console_sign_ins`: one row per sign-in attempt, written (under a transaction-scoped advisory
  lock) before the password's key derivation, so concurrent attempts cannot outrun the throttle,
  and kept in PostgreSQL, so every console process counts the same attempts. The app role may
  insert, read and delete them; it could clear the throttle, but a worker holding that role can
  read the sealed keys and guess passwords offline anyway.

Revision ID: 0007
Revises: 0006
Create Date: 2027-01-10
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from longrun.store.roles import app_role_name

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("console_sessions", sa.Column("mac", sa.String(80), nullable=True))
    op.create_table(
        "console_sign_ins",
        sa.Column("attempt_id", sa.String(32), nullable=False),
        sa.Column("client", sa.String(64), nullable=False),
        sa.Column("principal", sa.String(100), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.PrimaryKeyConstraint("attempt_id", name=op.f("pk_console_sign_ins")),
    )
    op.create_index(op.f("ix_console_sign_ins_client"), "console_sign_ins", ["client"])
    op.create_index(op.f("ix_console_sign_ins_at"), "console_sign_ins", ["at"])
    role = app_role_name()
    op.execute(f"REVOKE ALL ON console_sign_ins FROM {role}")
    op.execute(f"GRANT SELECT, INSERT, DELETE ON console_sign_ins TO {role}")


def downgrade() -> None:
    op.drop_index(op.f("ix_console_sign_ins_at"), table_name="console_sign_ins")
    op.drop_index(op.f("ix_console_sign_ins_client"), table_name="console_sign_ins")
    op.drop_table("console_sign_ins")
    op.drop_column("console_sessions", "mac")
