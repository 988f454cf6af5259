"""prune and pin (issue 29): the bodies of finished runs may go, their proofs stay.

- `runs.pinned` (a pinned run is never pruned; the app role may set it, `longrun pin`, audited) and
  `runs.pruned_at` (when its bodies were pruned; only the owner may set it).
- `artifacts.pruned_at`: a pruned artifact keeps its row (sha256, size, media type) with no bytes;
  `ck_artifacts_size_matches` now reads "the size is the bytes' length, or the bytes were pruned".
- The append-only trigger of `transcript_entries`, `projections` and `facts` becomes
  `longrun_refuse_change_except_prune(body columns...)`: it still refuses every DELETE and every
  UPDATE, except an UPDATE made while the transaction set `longrun.prune = 'on'` that changes
  nothing but the named body columns (content; content; text and value). The row's number,
  hashes, role, timestamps stay, so the hash chain around a tombstone still links.
  Privilege is the real barrier: the app role keeps SELECT and INSERT only on these tables, so
  setting the flag gains it nothing (`tests/test_prune.py` shows it); the flag keeps an owner's
  stray UPDATE refused as before. `longrun.store.retention` is the only writer.
- `longrun_restore_artifact(sha256, bytes)` (SECURITY DEFINER, EXECUTE granted to the app role):
  puts back the bytes of a pruned artifact, only when they hash to its name. Artifacts are shared
  by content, so a new run that stores bytes an old pruned run also stored gets them back with
  its own `put_artifact` (the app role may not UPDATE `artifacts` itself).

Downgrade restores the plain triggers and drops the columns; it fails while a pruned artifact
exists (its empty bytes break the old size check): the bodies cannot come back.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from longrun.store.roles import app_role_name

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BODIES = {"transcript_entries": ("content",), "projections": ("content",), "facts": ("text", "value")}
"""The columns a prune may replace, per table (everything else of the row is kept)."""


def upgrade() -> None:
    op.add_column("runs", sa.Column("pinned", sa.Boolean(), server_default=sa.text("false"), nullable=False))
    op.add_column("runs", sa.Column("pruned_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column("artifacts", sa.Column("pruned_at", sa.DateTime(timezone=True), nullable=True))
    op.drop_constraint(op.f("ck_artifacts_size_matches"), "artifacts", type_="check")
    op.create_check_constraint(op.f("ck_artifacts_size_matches"), "artifacts",
                               "size = octet_length(data) OR (pruned_at IS NOT NULL AND octet_length(data) = 0)")
    op.execute(
        """
        CREATE FUNCTION longrun_refuse_change_except_prune() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP = 'UPDATE' AND coalesce(current_setting('longrun.prune', true), '') = 'on'
               AND to_jsonb(NEW) - TG_ARGV = to_jsonb(OLD) - TG_ARGV THEN
                RETURN NEW;
            END IF;
            RAISE EXCEPTION 'table % is append-only: % refused', TG_TABLE_NAME, TG_OP
                USING ERRCODE = 'LR001',
                      HINT = 'history is never rewritten; append a new row instead (bodies of finished runs '
                             'are pruned only by `longrun prune`)';
        END
        $$
        """
    )
    for table, columns in BODIES.items():
        args = ", ".join(f"'{c}'" for c in columns)
        op.execute(f"DROP TRIGGER {table}_append_only ON {table}")
        op.execute(f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
                   f"FOR EACH ROW EXECUTE FUNCTION longrun_refuse_change_except_prune({args})")
    op.execute(
        """
        CREATE FUNCTION longrun_restore_artifact(digest text, bytes bytea) RETURNS void
        LANGUAGE sql SECURITY DEFINER SET search_path = public, pg_temp AS $$
            UPDATE artifacts SET data = bytes, pruned_at = NULL
            WHERE sha256 = digest AND pruned_at IS NOT NULL AND encode(sha256(bytes), 'hex') = digest
        $$
        """
    )
    op.execute("REVOKE ALL ON FUNCTION longrun_restore_artifact(text, bytea) FROM PUBLIC")
    op.execute(f"GRANT EXECUTE ON FUNCTION longrun_restore_artifact(text, bytea) TO {app_role_name()}")
    op.execute(f"GRANT UPDATE (pinned) ON runs TO {app_role_name()}")


def downgrade() -> None:
    op.execute(f"REVOKE UPDATE (pinned) ON runs FROM {app_role_name()}")
    op.execute("DROP FUNCTION longrun_restore_artifact(text, bytea)")
    for table in BODIES:
        op.execute(f"DROP TRIGGER {table}_append_only ON {table}")
        op.execute(f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
                   "FOR EACH ROW EXECUTE FUNCTION longrun_refuse_change()")
    op.execute("DROP FUNCTION longrun_refuse_change_except_prune()")
    op.drop_constraint(op.f("ck_artifacts_size_matches"), "artifacts", type_="check")
    op.create_check_constraint(op.f("ck_artifacts_size_matches"), "artifacts", "size = octet_length(data)")
    op.drop_column("artifacts", "pruned_at")
    op.drop_column("runs", "pruned_at")
    op.drop_column("runs", "pinned")
