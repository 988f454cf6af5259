"""What a person signs: one canonical record per decision, and the proof that carries it.

Three purposes, one shape. Each record names the run, the principal and the key that signed it,
when it was issued and how long it may be presented (`lifetime_seconds`: a proof is *fresh* for
that long, so one captured from a log or a history cannot be replayed a day later):

- `DecisionRecord`: approve or reject one pending approval, bound to its approval id and its
  action hash (tool, canonical arguments, state version), so a signature for one action cannot
  be replayed on another; an approval that edits the arguments binds the *edited* action hash and
  names the original one (`edit_of`) and the stored edit (`edit_id`);
- `ScopeRecord`: a standing approval for many actions: tools, workspace path globs, a use limit,
  an expiry, and the hash of the constraints in force when it was granted;
- `ScopeRevokeRecord`: the end of a scope.

The proof carries the record as the exact canonical JSON text that was signed (`payload`), so
nobody re-serializes anything before verifying: the bytes checked are the bytes signed. Times
are whole UNIX seconds, so a record means the same after any JSON round trip.
"""

from __future__ import annotations

import base64
import binascii
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, TypeAdapter, ValidationError

from longrun.models.canonical import canonical_json

Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
KeyId = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{32}$")]
Name = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,99}$")]

DEFAULT_LIFETIME_SECONDS = 300
"""How long a signed record may be presented after it was issued: long enough for a slow network
and a retried grant, short enough that a captured proof is useless soon after."""
MAX_LIFETIME_SECONDS = 3600
CLOCK_SKEW_SECONDS = 60
"""A record issued up to this far in the verifier's future is accepted (clocks drift)."""


class SignableRecord(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    v: Literal[1] = 1
    run_id: str = Field(min_length=1, max_length=200)
    principal: Name
    key_id: KeyId
    issued_at: int = Field(ge=0, description="UNIX seconds")
    lifetime_seconds: int = Field(default=DEFAULT_LIFETIME_SECONDS, ge=1, le=MAX_LIFETIME_SECONDS)

    def canonical(self) -> str:
        """The text that is signed: canonical JSON of every field."""
        return canonical_json(self.model_dump(mode="json"))


class DecisionRecord(SignableRecord):
    purpose: Literal["longrun.decision"] = "longrun.decision"
    approval_id: str = Field(min_length=1, max_length=200)
    action_hash: Sha256
    decision: Literal["approve", "reject"]
    reason: str = Field(default="", max_length=2_000)
    ttl_seconds: int | None = Field(default=None, ge=1, le=7 * 24 * 3600)
    edit_of: Sha256 | None = Field(default=None, description="the proposed action's hash, when the approver edited it")
    edit_id: int | None = Field(default=None, ge=1)


class BudgetRecord(SignableRecord):
    """A raise of a run family's budget (or the refusal to raise it), bound to one budget request.
    The amount is in whole cents, so the signed text means the same after any JSON round trip."""

    purpose: Literal["longrun.budget"] = "longrun.budget"
    request_id: str = Field(min_length=1, max_length=100)
    decision: Literal["raise", "reject"]
    by_cents: int = Field(default=0, ge=0, le=100_000_000)
    reason: str = Field(default="", max_length=2_000)


class ScopeRecord(SignableRecord):
    purpose: Literal["longrun.scope"] = "longrun.scope"
    scope_id: str = Field(pattern=r"^scp-[0-9a-f]{16}$")
    tools: list[str] = Field(min_length=1, max_length=20)
    paths: list[str] = Field(min_length=1, max_length=50)
    max_uses: int = Field(ge=1, le=10_000)
    expires_at: int = Field(ge=0, description="UNIX seconds")
    constraints_sha256: Sha256


class ScopeRevokeRecord(SignableRecord):
    purpose: Literal["longrun.scope_revoke"] = "longrun.scope_revoke"
    scope_id: str = Field(pattern=r"^scp-[0-9a-f]{16}$")


SignedRecord = Annotated[DecisionRecord | ScopeRecord | ScopeRevokeRecord | BudgetRecord, Field(discriminator="purpose")]
record_adapter: TypeAdapter[DecisionRecord | ScopeRecord | ScopeRevokeRecord | BudgetRecord] = TypeAdapter(SignedRecord)


class Proof(BaseModel):
    """A signed record as it travels (in a workflow update) and is kept (in the audit): the exact
    signed text, the Ed25519 signature over it (base64) and the id of the key that made it.
    Nothing in it is secret."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    payload: str = Field(min_length=2, max_length=16_000)
    signature: str = Field(min_length=1, max_length=200)
    key_id: KeyId

    def record(self) -> DecisionRecord | ScopeRecord | ScopeRevokeRecord | BudgetRecord:
        """The record the payload holds.

        Raises:
            ValueError: the payload is not a record of a known purpose, or not canonical (a
                payload that is not the canonical text of its own record could mean two things).
        """
        try:
            parsed = record_adapter.validate_json(self.payload)
        except ValidationError as exc:
            raise ValueError(f"the signed payload is not a longrun record: {exc.errors()[0]['msg']}") from exc
        if parsed.canonical() != self.payload:
            raise ValueError("the signed payload is not in canonical form")
        return parsed

    def signature_bytes(self) -> bytes:
        try:
            return base64.b64decode(self.signature, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise ValueError("the signature is not base64") from exc


__all__ = [
    "CLOCK_SKEW_SECONDS",
    "DEFAULT_LIFETIME_SECONDS",
    "MAX_LIFETIME_SECONDS",
    "BudgetRecord",
    "DecisionRecord",
    "Proof",
    "ScopeRecord",
    "ScopeRevokeRecord",
    "SignedRecord",
    "record_adapter",
]
