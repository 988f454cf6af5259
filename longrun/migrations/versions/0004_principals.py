"""Principals, their public keys, and the argument edits approvers sign.

- `principals`: a person (or the console's service identity) who may view, approve or operate,
  by name, with roles. Never deleted: the audit names them.
- `credentials`: a principal's Ed25519 public key, by key id (the first 32 hex digits of the
  SHA-256 of the raw key), with an optional expiry. Only the public key is stored. A credential
  is never deleted or changed, except once: revoking it sets `revoked_at` (and a reason). A
  trigger refuses everything else, so `audit --verify` can judge an old decision against the key
  as it was then: registered before, not yet revoked, not yet expired.
- `call_edits`: the arguments an approver wrote with `approve --edit`, stored before the workflow
  hears of it (the update carries only the id, as `say` does), append-only.

The app role (workers, and the CLI's everyday URL) may only read principals and credentials:
registering or revoking a key needs the schema owner's URL, so a compromised worker cannot give
itself an approver's identity. It may read and add call edits.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from longrun.store.roles import app_role_name

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

NAME_PATTERN = "^[A-Za-z0-9][A-Za-z0-9._@-]{0,99}$"


def upgrade() -> None:
    op.create_table(
        "principals",
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("roles", postgresql.ARRAY(sa.String(20)), nullable=False),
        sa.Column("created_by", sa.String(200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint(f"name ~ '{NAME_PATTERN}'", name=op.f("ck_principals_name_pattern")),
        sa.CheckConstraint("roles <@ ARRAY['viewer', 'approver', 'operator']::varchar[]",
                           name=op.f("ck_principals_roles_known")),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_principals")),
    )
    op.create_table(
        "credentials",
        sa.Column("key_id", sa.String(32), nullable=False),
        sa.Column("principal", sa.String(100), nullable=False),
        sa.Column("algorithm", sa.String(20), nullable=False),
        sa.Column("public_key", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("revoked_reason", sa.Text(), server_default="", nullable=False),
        sa.CheckConstraint("key_id ~ '^[0-9a-f]{32}$'", name=op.f("ck_credentials_key_id_hex")),
        sa.CheckConstraint("algorithm = 'ed25519'", name=op.f("ck_credentials_algorithm_known")),
        sa.ForeignKeyConstraint(["principal"], ["principals.name"], name=op.f("fk_credentials_principal_principals")),
        sa.PrimaryKeyConstraint("key_id", name=op.f("pk_credentials")),
    )
    op.create_index(op.f("ix_credentials_principal"), "credentials", ["principal"])
    op.execute(
        """
        CREATE FUNCTION longrun_credential_change() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP = 'UPDATE' AND OLD.revoked_at IS NULL AND NEW.revoked_at IS NOT NULL
               AND (NEW.key_id, NEW.principal, NEW.algorithm, NEW.public_key, NEW.created_at,
                    NEW.expires_at) IS NOT DISTINCT FROM
                   (OLD.key_id, OLD.principal, OLD.algorithm, OLD.public_key, OLD.created_at,
                    OLD.expires_at) THEN
                RETURN NEW;
            END IF;
            RAISE EXCEPTION 'credentials are never changed or deleted (only revoked, once): % refused', TG_OP
                USING ERRCODE = 'LR001',
                      HINT = 'revoke the key and register a new one';
        END
        $$
        """
    )
    op.execute("CREATE TRIGGER credentials_revoke_only BEFORE UPDATE OR DELETE ON credentials "
               "FOR EACH ROW EXECUTE FUNCTION longrun_credential_change()")
    op.execute("CREATE TRIGGER credentials_no_truncate BEFORE TRUNCATE ON credentials "
               "FOR EACH STATEMENT EXECUTE FUNCTION longrun_refuse_change()")
    op.execute("CREATE TRIGGER principals_no_delete BEFORE DELETE ON principals "
               "FOR EACH ROW EXECUTE FUNCTION longrun_refuse_change()")
    op.execute("CREATE TRIGGER principals_no_truncate BEFORE TRUNCATE ON principals "
               "FOR EACH STATEMENT EXECUTE FUNCTION longrun_refuse_change()")

    op.create_table(
        "call_edits",
        sa.Column("run_id", sa.String(200), nullable=False),
        sa.Column("edit_id", sa.Integer(), nullable=False),
        sa.Column("approval_id", sa.String(200), nullable=False),
        sa.Column("call_seq", sa.Integer(), nullable=False),
        sa.Column("call_id", sa.String(200), nullable=False),
        sa.Column("arguments", sa.JSON(), nullable=False),
        sa.Column("action_hash", sa.String(64), nullable=False),
        sa.Column("edited_by", sa.String(200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint("edit_id >= 1", name=op.f("ck_call_edits_id_positive")),
        sa.ForeignKeyConstraint(["run_id"], ["runs.run_id"], name=op.f("fk_call_edits_run_id_runs")),
        sa.PrimaryKeyConstraint("run_id", "edit_id", name=op.f("pk_call_edits")),
    )
    op.execute("CREATE TRIGGER call_edits_append_only BEFORE UPDATE OR DELETE ON call_edits "
               "FOR EACH ROW EXECUTE FUNCTION longrun_refuse_change()")
    op.execute("CREATE TRIGGER call_edits_no_truncate BEFORE TRUNCATE ON call_edits "
               "FOR EACH STATEMENT EXECUTE FUNCTION longrun_refuse_change()")

    role = app_role_name()
    for table in ("principals", "credentials"):
        op.execute(f"REVOKE ALL ON {table} FROM {role}")
        op.execute(f"GRANT SELECT ON {table} TO {role}")
    op.execute(f"REVOKE ALL ON call_edits FROM {role}")
    op.execute(f"GRANT SELECT, INSERT ON call_edits TO {role}")


def downgrade() -> None:
    op.drop_table("call_edits")
    op.drop_index(op.f("ix_credentials_principal"), table_name="credentials")
    op.drop_table("credentials")
    op.drop_table("principals")
    op.execute("DROP FUNCTION IF EXISTS longrun_credential_change()")
