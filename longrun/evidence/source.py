"""A bundle's keys and rows, served the way `audit --verify`'s decision checks read them.

`longrun.auth.audit_check.verify_decisions` re-verifies every signed decision of a run from a
`DecisionSource`; against a database that is the `Store`, here it is the bundle. So a bundle's
decisions pass exactly the checks the live record passes: the proof against the key registered
for its principal as it was when the decision was recorded, the row against the signed record,
and every approval and scope any state version held against a verified decision.

Pure: no database, no Temporal, no network.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from longrun.auth.check import Credential
from longrun.auth.keys import key_id_of, load_public_pem
from longrun.errors import ConfigError
from longrun.evidence.lineage import Inherited
from longrun.models import AuditEvent, audit_event_adapter
from longrun.models.state import TaskState

CREDENTIAL_FIELDS = {"key_id", "principal", "algorithm", "public_key", "created_at", "expires_at", "revoked_at",
                     "revoked_reason"}


def when(value: Any) -> datetime | None:
    """A timestamp as the bundle writes it (ISO 8601 with its offset), or None."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"{value!r} is not a timestamp")
    moment = datetime.fromisoformat(value)
    if moment.tzinfo is None:
        raise ValueError(f"{value!r} has no UTC offset")
    return moment


def credential_of(row: Any, roles: dict[str, tuple[str, ...]]) -> Credential:
    """A `keys/credentials.jsonl` row as a `Credential`, after checking the key is the one its id names.

    Raises:
        ValueError: a field is missing or malformed, or the public key does not hash to the key id
            (the key was replaced)."""
    if not isinstance(row, dict) or set(row) != CREDENTIAL_FIELDS:
        raise ValueError(f"expected the fields {sorted(CREDENTIAL_FIELDS)}")
    if row["algorithm"] != "ed25519":
        raise ValueError(f"algorithm {row['algorithm']!r} is not ed25519")
    try:
        public = load_public_pem(str(row["public_key"]))
    except ConfigError as exc:
        raise ValueError(f"public key: {exc}") from exc
    if key_id_of(public) != row["key_id"]:
        raise ValueError(f"the public key hashes to key id {key_id_of(public)}, not {row['key_id']}: the key was "
                         "replaced after export")
    if row["principal"] not in roles:
        raise ValueError(f"its principal {row['principal']!r} is not in keys/principals.jsonl")
    created = when(row["created_at"])
    assert created is not None
    return Credential(key_id=row["key_id"], principal=row["principal"], public_key_pem=row["public_key"],
                      created_at=created, expires_at=when(row["expires_at"]), revoked_at=when(row["revoked_at"]),
                      revoked_reason=str(row["revoked_reason"]), roles=roles[row["principal"]])


@dataclass(frozen=True)
class BundleAuditRow:
    seq: int
    kind: str
    event: AuditEvent
    actor: str
    created_at: datetime


@dataclass(frozen=True)
class BundleStateRow:
    version: int
    state: TaskState


def audit_row(row: dict[str, Any]) -> BundleAuditRow:
    """Raises:
    ValueError: the event does not parse as an audit event (pydantic's error is a ValueError)."""
    created = when(row["created_at"])
    assert created is not None
    return BundleAuditRow(seq=int(row["seq"]), kind=str(row["kind"]), event=audit_event_adapter.validate_python(
        row["event"]), actor=str(row["actor"]), created_at=created)


def state_row(row: dict[str, Any]) -> BundleStateRow:
    return BundleStateRow(version=int(row["version"]), state=TaskState.model_validate(row["state"]))


@dataclass
class BundleSource:
    """One bundle's rows by run, and its keys: a `DecisionSource`."""

    keys: dict[str, Credential]
    audits: dict[str, list[BundleAuditRow]] = field(default_factory=dict)
    states: dict[str, list[BundleStateRow]] = field(default_factory=dict)
    edits: dict[str, dict[int, dict[str, Any]]] = field(default_factory=dict)
    entries: dict[tuple[str, int], tuple[str, str]] = field(default_factory=dict)
    """(run, seq) -> (hash, member) of every run's own transcript entries (for `lineage.cross_check`)."""
    inherited: list[Inherited] = field(default_factory=list)
    """Every ancestor's entry a fork carries."""

    def audit(self, run_id: str) -> Sequence[BundleAuditRow]:
        return self.audits.get(run_id, [])

    def state_history(self, run_id: str) -> Sequence[BundleStateRow]:
        return self.states.get(run_id, [])

    def credential(self, key_id: str) -> Credential | None:
        return self.keys.get(key_id)

    def call_edit(self, run_id: str, edit_id: int) -> dict[str, Any] | None:
        return self.edits.get(run_id, {}).get(edit_id)


__all__ = ["BundleAuditRow", "BundleSource", "BundleStateRow", "audit_row", "credential_of", "state_row", "when"]
