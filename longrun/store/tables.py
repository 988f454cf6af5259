"""The schema as typed SQLAlchemy ORM classes. The database changes only through the alembic
migrations in `longrun/migrations/`; `tests/test_migrations.py` checks that they and this module
describe the same schema.

Where the chain heads live: each append-only, hash-chained table (`task_state_versions`,
`transcript_entries`, `audit_events`) has a head hash and a row count on its `runs` row
(`<chain>_head`, `<chain>_count`). Every append inserts the new row chained to the head and moves
the head in one statement, serialized per run: a transcript or audit append is an `UPDATE runs ...
WHERE <chain>_head = :prev AND <chain>_count = :count` whose row lock serializes appenders and
whose RETURNING row the insert selects from (see `longrun.store.appends`); a state version is
appended by the compare-and-set statement itself, serialized by the `task_states` row lock its
`UPDATE ... WHERE state_version` takes, and written only if `state_head` is the `prev_hash` the
new row was hashed on. `create_run` inserts the run's row with the heads of what it writes in the
same transaction. So sequence numbers are dense, and `verify_chain` can tell a deleted tail (the
last row's hash is not the stored head) from a clean history.

Hashed payloads are stored as `json` (not `jsonb`): `json` keeps the text exactly as written, so a
payload read back parses to the same value it had when it was hashed.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    Boolean,
    CheckConstraint,
    DateTime,
    ForeignKey,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSON, JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from longrun.models.canonical import GENESIS_HASH

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

RUN_ID_MAX = 200
ACTOR_MAX = 200
HASH_LEN = 64

APPEND_ONLY_TABLES = ("task_state_versions", "transcript_entries", "projections", "audit_events", "instructions",
                      "run_artifacts", "facts", "closed_items", "run_tools")
"""Tables whose rows are never updated or deleted (a trigger refuses it). `call_edits` and
`run_lineage` (migration 0013; `tests/test_store_lineage.py`) are too, and
`credentials` may only be revoked (migration 0004; `tests/test_principals.py`)."""

CHAINED_TABLES = ("task_state_versions", "transcript_entries", "audit_events", "closed_items")
"""Append-only tables whose rows are hash-chained per run (`closed_items`' head is in the task
state, not on `runs`: `longrun.store.closing`)."""

APPEND_ONLY_SQLSTATE = "LR001"
"""SQLSTATE the append-only trigger raises; the store maps it to `AppendOnlyViolation`."""


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


def now_col() -> Mapped[datetime]:
    return mapped_column(DateTime(timezone=True), nullable=False, server_default=text("now()"))


class RunRow(Base):
    """One run: its spec, status and the heads of its three hash chains."""

    __tablename__ = "runs"

    run_id: Mapped[str] = mapped_column(String(RUN_ID_MAX), primary_key=True)
    spec: Mapped[dict[str, Any]] = mapped_column(JSONB, nullable=False)
    model: Mapped[str] = mapped_column(String(300), nullable=False)
    status: Mapped[str] = mapped_column(String(40), nullable=False)
    reason: Mapped[str] = mapped_column(Text, nullable=False, server_default="")
    parent_run_id: Mapped[str | None] = mapped_column(
        String(RUN_ID_MAX), ForeignKey("runs.run_id"), nullable=True, index=True
    )
    calibration: Mapped[dict[str, Any]] = mapped_column(JSONB, nullable=False, server_default=text("'{}'::jsonb"))
    state_head: Mapped[str] = mapped_column(String(HASH_LEN), nullable=False, server_default=GENESIS_HASH)
    state_count: Mapped[int] = mapped_column(Integer, nullable=False, server_default="0")
    transcript_head: Mapped[str] = mapped_column(String(HASH_LEN), nullable=False, server_default=GENESIS_HASH)
    transcript_count: Mapped[int] = mapped_column(Integer, nullable=False, server_default="0")
    audit_head: Mapped[str] = mapped_column(String(HASH_LEN), nullable=False, server_default=GENESIS_HASH)
    audit_count: Mapped[int] = mapped_column(Integer, nullable=False, server_default="0")
    created_at: Mapped[datetime] = now_col()
    updated_at: Mapped[datetime] = now_col()
    pinned: Mapped[bool] = mapped_column(Boolean, nullable=False, server_default=text("false"))
    """Never pruned while set (`longrun pin`; migration 0014)."""
    pruned_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    """When `longrun prune` replaced the run's bodies by tombstones (`longrun.store.retention`)."""

    __table_args__ = (
        CheckConstraint("status IN ('running', 'waiting_approval', 'paused', 'completed', 'failed', 'cancelled')",
                        name="status_known"),
        CheckConstraint("run_id <> ''", name="run_id_nonempty"),
    )


class TaskStateRow(Base):
    """The head state of a run: the one row compare-and-set updates."""

    __tablename__ = "task_states"

    run_id: Mapped[str] = mapped_column(String(RUN_ID_MAX), ForeignKey("runs.run_id"), primary_key=True)
    state_version: Mapped[int] = mapped_column(Integer, nullable=False)
    state: Mapped[dict[str, Any]] = mapped_column(JSONB, nullable=False)
    updated_at: Mapped[datetime] = now_col()

    __table_args__ = (CheckConstraint("state_version >= 1", name="version_positive"),)


class TaskStateVersionRow(Base):
    """Every version a run's state ever had (append-only, hash-chained)."""

    __tablename__ = "task_state_versions"

    run_id: Mapped[str] = mapped_column(String(RUN_ID_MAX), ForeignKey("runs.run_id"))
    version: Mapped[int] = mapped_column(Integer)
    state: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False)
    actor: Mapped[str] = mapped_column(String(ACTOR_MAX), nullable=False)
    reason: Mapped[str] = mapped_column(Text, nullable=False)
    created_at: Mapped[datetime] = now_col()
    prev_hash: Mapped[str] = mapped_column(String(HASH_LEN), nullable=False)
    hash: Mapped[str] = mapped_column(String(HASH_LEN), nullable=False)

    __table_args__ = (
        PrimaryKeyConstraint("run_id", "version"),
        CheckConstraint("version >= 1", name="version_positive"),
    )


class TranscriptEntryRow(Base):
    """One message of a run's conversation, in full (append-only, hash-chained)."""

    __tablename__ = "transcript_entries"

    run_id: Mapped[str] = mapped_column(String(RUN_ID_MAX), ForeignKey("runs.run_id"))
    seq: Mapped[int] = mapped_column(Integer)
    role: Mapped[str] = mapped_column(String(20), nullable=False)
    content: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False)
    token_estimate: Mapped[int] = mapped_column(Integer, nullable=False)
    usage: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    turn: Mapped[int | None] = mapped_column(Integer, nullable=True)
    created_at: Mapped[datetime] = now_col()
    prev_hash: Mapped[str] = mapped_column(String(HASH_LEN), nullable=False)
    hash: Mapped[str] = mapped_column(String(HASH_LEN), nullable=False)

    __table_args__ = (
        PrimaryKeyConstraint("run_id", "seq"),
        CheckConstraint("seq >= 1", name="seq_positive"),
        CheckConstraint("role IN ('user', 'assistant')", name="role_known"),
        CheckConstraint("token_estimate >= 0", name="token_estimate_nonnegative"),
    )


class ArtifactRow(Base):
    """Content-addressed bytes (tool output, files), stored once per sha256."""

    __tablename__ = "artifacts"

    sha256: Mapped[str] = mapped_column(String(HASH_LEN), primary_key=True)
    data: Mapped[bytes] = mapped_column(LargeBinary, nullable=False)
    media_type: Mapped[str] = mapped_column(String(200), nullable=False)
    size: Mapped[int] = mapped_column(Integer, nullable=False)
    created_at: Mapped[datetime] = now_col()
    pruned_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    """Set when the bytes were pruned (no run that links them is unpruned): `data` is empty,
    `size` says how many bytes there were (migration 0014)."""

    __table_args__ = (
        CheckConstraint("size = octet_length(data) OR (pruned_at IS NOT NULL AND octet_length(data) = 0)",
                        name="size_matches"),
        CheckConstraint("sha256 ~ '^[0-9a-f]{64}$'", name="sha256_hex"),
    )


class RunArtifactRow(Base):
    """Which run stored which artifact (append-only, migration 0005): `read_artifact` resolves a
    reference only among the artifacts of the run, its parent and its children."""

    __tablename__ = "run_artifacts"

    run_id: Mapped[str] = mapped_column(String(RUN_ID_MAX), ForeignKey("runs.run_id"))
    sha256: Mapped[str] = mapped_column(String(HASH_LEN), ForeignKey("artifacts.sha256"), index=True)
    created_at: Mapped[datetime] = now_col()

    __table_args__ = (PrimaryKeyConstraint("run_id", "sha256"),)


class ProjectionRow(Base):
    """A compacted view of a run's transcript (append-only; the newest version is current)."""

    __tablename__ = "projections"

    run_id: Mapped[str] = mapped_column(String(RUN_ID_MAX), ForeignKey("runs.run_id"))
    version: Mapped[int] = mapped_column(Integer)
    base_state_version: Mapped[int] = mapped_column(Integer, nullable=False)
    covers_through_seq: Mapped[int] = mapped_column(Integer, nullable=False)
    content: Mapped[dict[str, Any]] = mapped_column(JSONB, nullable=False)
    report: Mapped[dict[str, Any]] = mapped_column(JSONB, nullable=False)
    created_at: Mapped[datetime] = now_col()

    __table_args__ = (
        PrimaryKeyConstraint("run_id", "version"),
        CheckConstraint("version >= 1", name="version_positive"),
        CheckConstraint("covers_through_seq >= 0", name="covers_nonnegative"),
    )


class FactStoreRow(Base):
    """One fact of a run's fact store (append-only; a later row names the rows it replaced).
    Migration 0008 says why; `longrun.context.factstore` what reads it."""

    __tablename__ = "facts"

    run_id: Mapped[str] = mapped_column(String(RUN_ID_MAX), ForeignKey("runs.run_id"))
    seq: Mapped[int] = mapped_column(Integer)
    source_seq: Mapped[int] = mapped_column(Integer, nullable=False)
    kind: Mapped[str] = mapped_column(String(16), nullable=False)
    source: Mapped[str] = mapped_column(String(8), nullable=False)
    subject: Mapped[str] = mapped_column(Text, nullable=False)
    value: Mapped[str] = mapped_column(Text, nullable=False)
    text: Mapped[str] = mapped_column(Text, nullable=False)
    where_call: Mapped[str] = mapped_column(Text, nullable=False)
    count: Mapped[int] = mapped_column(Integer, nullable=False)
    final: Mapped[bool] = mapped_column(Boolean, nullable=False)
    rejected: Mapped[bool] = mapped_column(Boolean, nullable=False)
    quoted: Mapped[bool] = mapped_column(Boolean, nullable=False)
    supersedes: Mapped[list[int]] = mapped_column(ARRAY(Integer), nullable=False)
    projection_version: Mapped[int] = mapped_column(Integer, nullable=False)
    created_at: Mapped[datetime] = now_col()

    __table_args__ = (
        PrimaryKeyConstraint("run_id", "seq"),
        CheckConstraint("seq >= 1", name="seq_positive"),
        CheckConstraint("source_seq >= 0", name="source_seq_nonnegative"),
        CheckConstraint("kind IN ('rule', 'decision', 'value', 'status', 'preference')", name="kind_known"),
        CheckConstraint("source IN ('user', 'agent', 'tool', 'note')", name="source_known"),
    )


class RunToolRow(Base):
    """One tool a run was offered at its start (append-only; migration 0010,
    `longrun.tools.recorded` says what holds a run to it)."""

    __tablename__ = "run_tools"

    run_id: Mapped[str] = mapped_column(String(RUN_ID_MAX), ForeignKey("runs.run_id"))
    name: Mapped[str] = mapped_column(String(64))
    position: Mapped[int] = mapped_column(Integer, nullable=False)
    source: Mapped[str] = mapped_column(String(8), nullable=False)
    kind: Mapped[str] = mapped_column(String(16), nullable=False)
    needs_approval: Mapped[bool] = mapped_column(Boolean, nullable=False)
    schema_sha256: Mapped[str] = mapped_column(String(HASH_LEN), nullable=False)
    input_schema: Mapped[dict[str, Any]] = mapped_column(JSONB, nullable=False)
    description: Mapped[str] = mapped_column(Text, nullable=False)
    path_arg: Mapped[str | None] = mapped_column(String(200), nullable=True)
    content_arg: Mapped[str | None] = mapped_column(String(200), nullable=True)
    created_at: Mapped[datetime] = now_col()

    __table_args__ = (
        PrimaryKeyConstraint("run_id", "name"),
        CheckConstraint("source IN ('builtin', 'custom', 'mcp')", name="source_known"),
    )


class AuditEventRow(Base):
    """One audit event (append-only, hash-chained); the audit is complete from Postgres alone."""

    __tablename__ = "audit_events"

    run_id: Mapped[str] = mapped_column(String(RUN_ID_MAX), ForeignKey("runs.run_id"))
    seq: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(60), nullable=False)
    event: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False)
    actor: Mapped[str] = mapped_column(String(ACTOR_MAX), nullable=False)
    created_at: Mapped[datetime] = now_col()
    prev_hash: Mapped[str] = mapped_column(String(HASH_LEN), nullable=False)
    hash: Mapped[str] = mapped_column(String(HASH_LEN), nullable=False)

    __table_args__ = (
        PrimaryKeyConstraint("run_id", "seq"),
        CheckConstraint("seq >= 1", name="seq_positive"),
    )


class InstructionRow(Base):
    """One instruction a human queued for a run with `say` (append-only). The text lives only
    here: the workflow is told the id, so the text never enters Temporal's history.

    `instruction_id` numbers a run's instructions 1, 2, ... (allocated under the `runs` row lock,
    as transcript and audit numbers are); the primary key is (run_id, instruction_id), so an id
    is only ever read together with its run."""

    __tablename__ = "instructions"

    run_id: Mapped[str] = mapped_column(String(RUN_ID_MAX), ForeignKey("runs.run_id"))
    instruction_id: Mapped[int] = mapped_column(Integer)
    text: Mapped[str] = mapped_column(Text, nullable=False)
    as_constraint: Mapped[bool] = mapped_column(Boolean, nullable=False)
    actor: Mapped[str] = mapped_column(String(ACTOR_MAX), nullable=False)
    created_at: Mapped[datetime] = now_col()

    __table_args__ = (
        PrimaryKeyConstraint("run_id", "instruction_id"),
        CheckConstraint("instruction_id >= 1", name="id_positive"),
        CheckConstraint("text <> ''", name="text_nonempty"),
    )


class PrincipalRow(Base):
    """A person (or service) who may view, approve or operate, with roles. Never deleted."""

    __tablename__ = "principals"

    name: Mapped[str] = mapped_column(String(100), primary_key=True)
    roles: Mapped[list[str]] = mapped_column(ARRAY(String(20)), nullable=False)
    created_by: Mapped[str] = mapped_column(String(ACTOR_MAX), nullable=False)
    created_at: Mapped[datetime] = now_col()

    __table_args__ = (
        CheckConstraint("name ~ '^[A-Za-z0-9][A-Za-z0-9._@-]{0,99}$'", name="name_pattern"),
        CheckConstraint("roles <@ ARRAY['viewer', 'approver', 'operator']::varchar[]", name="roles_known"),
    )


class CredentialRow(Base):
    """A principal's Ed25519 public key. Never changed or deleted, only revoked once (trigger)."""

    __tablename__ = "credentials"

    key_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    principal: Mapped[str] = mapped_column(String(100), ForeignKey("principals.name"), nullable=False, index=True)
    algorithm: Mapped[str] = mapped_column(String(20), nullable=False)
    public_key: Mapped[str] = mapped_column(Text, nullable=False)
    created_at: Mapped[datetime] = now_col()
    expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    revoked_reason: Mapped[str] = mapped_column(Text, nullable=False, server_default="")

    __table_args__ = (
        CheckConstraint("key_id ~ '^[0-9a-f]{32}$'", name="key_id_hex"),
        CheckConstraint("algorithm = 'ed25519'", name="algorithm_known"),
    )


class CallEditRow(Base):
    """Arguments an approver wrote for a pending call (`approve --edit`), append-only; the
    workflow is told the id only."""

    __tablename__ = "call_edits"

    run_id: Mapped[str] = mapped_column(String(RUN_ID_MAX), ForeignKey("runs.run_id"))
    edit_id: Mapped[int] = mapped_column(Integer)
    approval_id: Mapped[str] = mapped_column(String(200), nullable=False)
    call_seq: Mapped[int] = mapped_column(Integer, nullable=False)
    call_id: Mapped[str] = mapped_column(String(200), nullable=False)
    arguments: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False)
    action_hash: Mapped[str] = mapped_column(String(HASH_LEN), nullable=False)
    edited_by: Mapped[str] = mapped_column(String(ACTOR_MAX), nullable=False)
    created_at: Mapped[datetime] = now_col()

    __table_args__ = (
        PrimaryKeyConstraint("run_id", "edit_id"),
        CheckConstraint("edit_id >= 1", name="id_positive"),
    )


class ConsoleKeyRow(Base):
    """A principal's console signing key, sealed under their console password (migration 0006).
    Append-only: a new password is a new key."""

    __tablename__ = "console_keys"

    key_id: Mapped[str] = mapped_column(String(32), ForeignKey("credentials.key_id"), primary_key=True)
    principal: Mapped[str] = mapped_column(String(100), ForeignKey("principals.name"), nullable=False, index=True)
    kdf: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False)
    salt: Mapped[bytes] = mapped_column(LargeBinary, nullable=False)
    nonce: Mapped[bytes] = mapped_column(LargeBinary, nullable=False)
    sealed_key: Mapped[bytes] = mapped_column(LargeBinary, nullable=False)
    created_at: Mapped[datetime] = now_col()


class ConsoleSessionRow(Base):
    """One signed-in browser: found by the hash of its cookie's token, its key sealed under it."""

    __tablename__ = "console_sessions"

    token_sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    principal: Mapped[str] = mapped_column(String(100), ForeignKey("principals.name"), nullable=False)
    key_id: Mapped[str] = mapped_column(String(32), ForeignKey("credentials.key_id"), nullable=False)
    nonce: Mapped[bytes] = mapped_column(LargeBinary, nullable=False)
    sealed_key: Mapped[bytes] = mapped_column(LargeBinary, nullable=False)
    created_at: Mapped[datetime] = now_col()
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    ended_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    mac: Mapped[str | None] = mapped_column(String(80), nullable=True)
    """HMAC-SHA256 under the console's own key (migration 0007, `longrun.console.session_mac`): a row
    without a valid one (written with the app role, or before 0007) signs no one in."""


class ConsoleSignInRow(Base):
    """One sign-in attempt, recorded before its password is tried (migration 0007): the console's
    throttle counts these per (client address, name), per address and in all, across processes.
    A successful sign-in deletes its own (address, name) rows."""

    __tablename__ = "console_sign_ins"

    attempt_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    client: Mapped[str] = mapped_column(String(64), nullable=False, index=True)
    principal: Mapped[str] = mapped_column(String(100), nullable=False)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False, server_default=text("now()"),
                                         index=True)


def core_table(row: type[Base]) -> Table:
    """The Core `Table` behind an ORM class, typed as one (the hot paths insert with Core)."""
    table = row.__table__
    assert isinstance(table, Table)
    return table


__all__ = [
    "APPEND_ONLY_SQLSTATE",
    "APPEND_ONLY_TABLES",
    "CHAINED_TABLES",
    "NAMING_CONVENTION",
    "ArtifactRow",
    "AuditEventRow",
    "Base",
    "CallEditRow",
    "ConsoleKeyRow",
    "ConsoleSessionRow",
    "ConsoleSignInRow",
    "CredentialRow",
    "InstructionRow",
    "PrincipalRow",
    "ProjectionRow",
    "RunRow",
    "RunToolRow",
    "TaskStateRow",
    "TaskStateVersionRow",
    "TranscriptEntryRow",
    "core_table",
]
