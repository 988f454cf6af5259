"""Least privilege: the role workers connect as, and its grants.

Workers do not need to own the schema. They connect as an app role (default `longrun_app`, set
`LONGRUN_APP_ROLE` before migrating to choose another name) that may:

- SELECT and INSERT on the append-only tables (`task_state_versions`, `transcript_entries`,
  `projections`, `audit_events`) and on `artifacts`: never UPDATE, DELETE or TRUNCATE, so even
  with the append-only trigger disabled by the owner, history cannot be rewritten through it;
- SELECT, INSERT and UPDATE of the mutable columns of `runs` (status, reason, calibration, chain
  heads and counts, updated_at) and of `task_states` (the compare-and-set head); no DELETE;
- SELECT on `alembic_version` (to report the schema revision).

The role is created NOLOGIN when it does not exist (it is a cluster-wide object, so an existing one
is reused and only granted to). Giving it a way in is a deployment step: `longrun dev up` runs
`ALTER ROLE ... LOGIN` on the embedded server (Unix-socket trust authentication, no password);
elsewhere, `ALTER ROLE longrun_app LOGIN PASSWORD '...'` (see docs/SECURITY.md). Migrations keep
running as the owner.

Revision ID: 0002
Revises: 0001
Create Date: 2025-01-02
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

from longrun.store.roles import app_role_name

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

APPEND_ONLY = ("task_state_versions", "transcript_entries", "projections", "audit_events", "artifacts")
MUTABLE_COLUMNS = {
    "runs": ("status", "reason", "calibration", "state_head", "state_count", "transcript_head",
             "transcript_count", "audit_head", "audit_count", "updated_at"),
    "task_states": ("state_version", "state", "updated_at"),
}


def upgrade() -> None:
    role = app_role_name()
    op.execute(
        f"""
        DO $$
        BEGIN
            IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = '{role}') THEN
                CREATE ROLE {role} NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT;
            END IF;
        END
        $$
        """
    )
    op.execute(f"GRANT USAGE ON SCHEMA public TO {role}")
    for table in APPEND_ONLY:
        op.execute(f"REVOKE ALL ON {table} FROM {role}")
        op.execute(f"GRANT SELECT, INSERT ON {table} TO {role}")
    for table, columns in MUTABLE_COLUMNS.items():
        op.execute(f"REVOKE ALL ON {table} FROM {role}")
        op.execute(f"GRANT SELECT, INSERT ON {table} TO {role}")
        op.execute(f"GRANT UPDATE ({', '.join(columns)}) ON {table} TO {role}")
    op.execute(f"GRANT SELECT ON alembic_version TO {role}")


def downgrade() -> None:
    role = app_role_name()
    for table in (*APPEND_ONLY, *MUTABLE_COLUMNS, "alembic_version"):
        op.execute(f"REVOKE ALL ON {table} FROM {role}")
    op.execute(f"REVOKE USAGE ON SCHEMA public FROM {role}")
