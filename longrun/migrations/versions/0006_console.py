"""The console's key store and its sessions.

- `console_keys`: a principal's console signing key, encrypted. The console signs decisions on
  behalf of a signed-in person, so it needs a private key; it never holds one in clear. Each row
  is the raw Ed25519 private key sealed with AES-256-GCM under a key derived from the person's
  console password with scrypt (salt, nonce and the KDF's parameters are kept beside it). The
  password itself is stored nowhere: a wrong one fails the GCM tag. The key's public half is an
  ordinary credential (`credentials`), so the worker and `audit --verify` check console decisions
  exactly as CLI ones. Written only with the owner's URL (`longrun approvers add NAME --console`),
  read-only to the app role, and append-only: a new password is a new key.
- `console_sessions`: one row per signed-in browser. The row is found by the SHA-256 of the
  session token (the token lives only in the browser's HttpOnly cookie); it holds the same private
  key sealed again under a key derived from that token, so nothing in the table can sign without
  the cookie. Ending a session sets `ended_at`; expired rows may be deleted.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from longrun.store.roles import app_role_name

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "console_keys",
        sa.Column("key_id", sa.String(32), nullable=False),
        sa.Column("principal", sa.String(100), nullable=False),
        sa.Column("kdf", sa.JSON(), nullable=False),
        sa.Column("salt", sa.LargeBinary(), nullable=False),
        sa.Column("nonce", sa.LargeBinary(), nullable=False),
        sa.Column("sealed_key", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.ForeignKeyConstraint(["key_id"], ["credentials.key_id"], name=op.f("fk_console_keys_key_id_credentials")),
        sa.ForeignKeyConstraint(["principal"], ["principals.name"], name=op.f("fk_console_keys_principal_principals")),
        sa.PrimaryKeyConstraint("key_id", name=op.f("pk_console_keys")),
    )
    op.create_index(op.f("ix_console_keys_principal"), "console_keys", ["principal"])
    op.execute("CREATE TRIGGER console_keys_append_only BEFORE UPDATE OR DELETE ON console_keys "
               "FOR EACH ROW EXECUTE FUNCTION longrun_refuse_change()")
    op.execute("CREATE TRIGGER console_keys_no_truncate BEFORE TRUNCATE ON console_keys "
               "FOR EACH STATEMENT EXECUTE FUNCTION longrun_refuse_change()")
    op.create_table(
        "console_sessions",
        sa.Column("token_sha256", sa.String(64), nullable=False),
        sa.Column("principal", sa.String(100), nullable=False),
        sa.Column("key_id", sa.String(32), nullable=False),
        sa.Column("nonce", sa.LargeBinary(), nullable=False),
        sa.Column("sealed_key", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["key_id"], ["credentials.key_id"],
                                name=op.f("fk_console_sessions_key_id_credentials")),
        sa.ForeignKeyConstraint(["principal"], ["principals.name"],
                                name=op.f("fk_console_sessions_principal_principals")),
        sa.PrimaryKeyConstraint("token_sha256", name=op.f("pk_console_sessions")),
    )
    role = app_role_name()
    op.execute(f"REVOKE ALL ON console_keys FROM {role}")
    op.execute(f"GRANT SELECT ON console_keys TO {role}")
    op.execute(f"REVOKE ALL ON console_sessions FROM {role}")
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON console_sessions TO {role}")


def downgrade() -> None:
    op.drop_table("console_sessions")
    op.drop_index(op.f("ix_console_keys_principal"), table_name="console_keys")
    op.drop_table("console_keys")
