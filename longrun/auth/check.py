"""Whether a proof holds, at a given moment, against the credential registered for its key.

Pure: the caller fetches the credential (the grant activity from Postgres, now; `audit --verify`
from Postgres, as of the moment the decision was recorded) and then compares the record's fields
with what it should be about (the pending approval, the audit row). Every refusal says what was
wrong and what to do, because it reaches a person through the CLI and the audit.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from longrun.auth.keys import load_public_pem, verify_signature
from longrun.errors import ConfigError, ProofRefused
from longrun.models.signed import (
    CLOCK_SKEW_SECONDS,
    BudgetRecord,
    DecisionRecord,
    Proof,
    ScopeRecord,
    ScopeRevokeRecord,
)

ROLES = ("viewer", "approver", "operator")
"""viewer reads; approver decides approvals and grants scopes; operator pauses, resumes, cancels
and steers (used by the console)."""


@dataclass(frozen=True)
class Credential:
    """A registered public key, as Postgres holds it, with its principal's roles."""

    key_id: str
    principal: str
    public_key_pem: str
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None
    revoked_reason: str
    roles: tuple[str, ...]

    def status_at(self, at: datetime) -> str:
        """`active`, `revoked` or `expired` at that moment (`pending` before it was registered)."""
        if at < self.created_at:
            return "pending"
        if self.revoked_at is not None and at >= self.revoked_at:
            return "revoked"
        if self.expires_at is not None and at >= self.expires_at:
            return "expired"
        return "active"


Record = DecisionRecord | ScopeRecord | ScopeRevokeRecord | BudgetRecord


def check_proof(proof: Proof | None, credential: Credential | None, at: datetime, *, role: str = "approver",
                grace_seconds: int = 0) -> Record:
    """The record a proof carries, if the proof holds at `at`.

    Args:
        proof: the proof presented (None: none was).
        credential: the credential registered under `proof.key_id` (None: none is).
        at: when the proof is judged: now for a grant, the moment it was recorded for an audit.
        role: the role the principal must have.
        grace_seconds: how much later than its lifetime the record may be judged (an audit
            judges at the moment the row was written, a little after the grant verified it).

    Raises:
        ProofRefused: the reason, and what to do about it.
    """
    if proof is None:
        raise ProofRefused("no signed proof: `--as NAME` alone approves nothing; sign the decision with your key "
                           "(`longrun approve RUN --as NAME` reads it from $LONGRUN_HOME/keys/NAME.pem, or --key PATH)")
    try:
        record = proof.record()
        signature = proof.signature_bytes()
    except ValueError as exc:
        raise ProofRefused(f"malformed proof: {exc}") from exc
    if record.key_id != proof.key_id:
        raise ProofRefused("malformed proof: the record names another key than the proof")
    if credential is None:
        raise ProofRefused(f"key {proof.key_id} is not registered: `longrun approvers list` shows the registered keys; "
                           f"`longrun approvers add {record.principal}` registers one")
    if credential.principal != record.principal:
        raise ProofRefused(f"key {proof.key_id} belongs to {credential.principal!r}, not to {record.principal!r}: "
                           "sign with your own key")
    status = credential.status_at(at)
    if status == "revoked":
        raise ProofRefused(f"key {proof.key_id} of {record.principal} was revoked at {credential.revoked_at:%Y-%m-%d %H:%M:%S} UTC"
                           f"{' (' + credential.revoked_reason + ')' if credential.revoked_reason else ''}: "
                           f"ask an administrator for a new key (`longrun approvers add {record.principal} --new-key`)")
    if status == "expired":
        raise ProofRefused(f"key {proof.key_id} of {record.principal} expired at {credential.expires_at:%Y-%m-%d %H:%M:%S} UTC: "
                           f"ask an administrator for a new key (`longrun approvers add {record.principal} --new-key`)")
    if status == "pending":
        raise ProofRefused(f"key {proof.key_id} was registered only after this decision was made")
    if role not in credential.roles:
        raise ProofRefused(f"{record.principal} has roles {', '.join(credential.roles) or '(none)'}, not {role}: an "
                           f"administrator can add it (`longrun approvers add {record.principal} --role {role}`)")
    moment = int(at.timestamp())
    if record.issued_at > moment + CLOCK_SKEW_SECONDS:
        raise ProofRefused("the record was issued in the future (more than a minute ahead of the verifier's clock): "
                           "check your clock and sign again")
    if moment > record.issued_at + record.lifetime_seconds + grace_seconds:
        raise ProofRefused(f"the record is stale: issued {moment - record.issued_at} s before it was presented, "
                           f"valid for {record.lifetime_seconds} s; sign a fresh one (run the command again)")
    try:
        public = load_public_pem(credential.public_key_pem)
    except ConfigError as exc:
        raise ProofRefused(f"the registered key {proof.key_id} cannot be read: {exc}") from exc
    if not verify_signature(public, proof.payload, signature):
        raise ProofRefused(f"the signature does not verify against key {proof.key_id} of {record.principal}: the "
                           "record was changed after it was signed, or signed with another key")
    return record


__all__ = ["ROLES", "Credential", "Record", "check_proof"]
