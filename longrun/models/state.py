"""`TaskState`: the durable record of a run. What authorizes the next action lives here, never in
the transcript or a summary. Written only by compare-and-set (see `longrun.store`)."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import Enum
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from longrun.models.canonical import GENESIS_HASH

MAX_TEXT = 20_000
"""Longest single text field we accept (objective, a constraint, a note): a guard against
oversized input, not a budget."""

ShortText = Annotated[str, StringConstraints(max_length=MAX_TEXT)]
Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]


def utcnow() -> datetime:
    return datetime.now(UTC)


class NextAction(str, Enum):
    """What the run does next. Tools are checked against it by the invariant gate."""

    inspect = "inspect"
    edit = "edit"
    test = "test"
    ask_human = "ask_human"
    stop = "stop"


class Step(str, Enum):
    """The stages of a forensic review or refactor, in order. `complete_stage` advances them."""

    survey = "survey"
    investigate = "investigate"
    fix = "fix"
    verify = "verify"
    report = "report"
    done = "done"

    def following(self) -> Step:
        order = list(Step)
        i = order.index(self)
        return order[min(i + 1, len(order) - 1)]


class EffectStatus(str, Enum):
    """`unknown` = intent written, outcome not yet known (the call may or may not have happened)."""

    none = "none"
    confirmed = "confirmed"
    unknown = "unknown"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class Decision(_Strict):
    summary: ShortText = Field(min_length=1)
    reason: ShortText = ""
    at: datetime


class ApprovalEdit(_Strict):
    """The approver changed the proposed call's arguments before approving it: the approval is
    bound to the edited call, whose arguments are `call_edits` row `edit_id`."""

    edit_id: int = Field(ge=1)
    call_seq: int = Field(ge=1)
    call_id: str = Field(min_length=1, max_length=200)
    original_action_hash: Sha256


class Approval(_Strict):
    """A human's approval of one exact action (bound by `action_hash`), used once, expiring.
    Granted only from a signed decision the worker verified (`key_id` names the key)."""

    id: str = Field(min_length=1, max_length=200)
    scope: str = Field(min_length=1, max_length=200, description="the tool the approval covers")
    action_hash: Sha256
    approved_by: str = Field(min_length=1, max_length=200)
    approved_at: datetime
    expires_at: datetime
    used: bool = False
    key_id: str | None = Field(default=None, max_length=32, description="the key that signed it (None: before signing)")
    edit: ApprovalEdit | None = None

    def valid_at(self, now: datetime) -> bool:
        return not self.used and now < self.expires_at


class Scope(_Strict):
    """A standing, signed approval for many actions: the listed tools on workspace paths matching
    the globs, at most `max_uses` times, until `expires_at`, while the constraints stay the ones
    it was granted under (their hash). `ended` says why it is no longer in force (revoked, a new
    constraint); empty while it is."""

    id: str = Field(pattern=r"^scp-[0-9a-f]{16}$")
    tools: list[str] = Field(min_length=1, max_length=20)
    paths: list[str] = Field(min_length=1, max_length=50)
    max_uses: int = Field(ge=1)
    uses: int = Field(default=0, ge=0)
    granted_by: str = Field(min_length=1, max_length=200)
    key_id: str = Field(max_length=32)
    granted_at: datetime
    expires_at: datetime
    constraints_sha256: Sha256
    ended: str = Field(default="", max_length=500)

    def refusal(self, now: datetime, constraints_sha256: str) -> str | None:
        """Why the scope cannot cover a use now (None: it can)."""
        if self.ended:
            return f"scope {self.id} ended: {self.ended}"
        if now >= self.expires_at:
            return f"scope {self.id} expired at {self.expires_at.isoformat()}"
        if self.uses >= self.max_uses:
            return f"scope {self.id} is used up ({self.uses} of {self.max_uses} uses)"
        if constraints_sha256 != self.constraints_sha256:
            return f"scope {self.id} was granted under other constraints (one was added since)"
        return None


class Effect(_Strict):
    """One entry of the effects ledger. `idempotency_key` equals `action_id`."""

    action_id: str = Field(min_length=1, max_length=300)
    tool: str = Field(min_length=1, max_length=200)
    status: EffectStatus
    external_id: str | None = None
    idempotency_key: str = Field(min_length=1, max_length=300)
    attempts: int = Field(default=1, ge=1)
    detail: str = ""
    before: str | None = Field(default=None, max_length=200, description="fingerprint of the target before the call")


class ArtifactRef(_Strict):
    sha256: Sha256
    uri: str = Field(min_length=1, max_length=2000)
    version: int = Field(ge=1, description="state_version at which the artifact was recorded")


class ClosedItems(_Strict):
    """What the run has closed and moved out of the state: settled effects, used or expired
    approvals, ended scopes. The items are rows of the append-only, hash-chained `closed_items`
    table (`longrun.store.closed`); the state keeps their number and chain head, so the state
    history vouches for that chain, and counts by kind for the state block."""

    count: int = Field(default=0, ge=0, description="rows of closed_items for this run")
    head: Sha256 = GENESIS_HASH
    effects_confirmed: int = Field(default=0, ge=0)
    effects_none: int = Field(default=0, ge=0)
    approvals_used: int = Field(default=0, ge=0)
    approvals_expired: int = Field(default=0, ge=0)
    approvals_edited: int = Field(default=0, ge=0, description="closed approvals that carry an approver's edit")
    scopes: int = Field(default=0, ge=0)

    @property
    def effects(self) -> int:
        return self.effects_confirmed + self.effects_none

    @property
    def approvals(self) -> int:
        return self.approvals_used + self.approvals_expired


class TaskState(_Strict):
    """The versioned record of one run. `state_version` starts at 1 and grows by one per write."""

    run_id: str = Field(min_length=1, max_length=200)
    state_version: int = Field(ge=1)
    objective: ShortText = Field(min_length=1)
    constraints: list[ShortText] = Field(default_factory=list, max_length=500)
    current_step: Step = Step.survey
    next_action: NextAction = NextAction.inspect
    decisions: list[Decision] = Field(default_factory=list)
    approvals: list[Approval] = Field(default_factory=list)
    scopes: list[Scope] = Field(default_factory=list)
    effects: list[Effect] = Field(default_factory=list)
    artifact_refs: list[ArtifactRef] = Field(default_factory=list)
    notes: list[ShortText] = Field(default_factory=list)
    closed: ClosedItems = Field(default_factory=ClosedItems)
    """Closed items live in `closed_items`; `effects`, `approvals` and `scopes` hold open ones."""
    updated_at: datetime = Field(default_factory=utcnow)
    tools_sha256: Sha256 | None = None
    """The hash of the tools the run was offered at its start (`longrun.tools.recorded`; the list is
    in the `run_tools` table); None for a run started before they were recorded."""

    def unknown_effects(self) -> list[Effect]:
        return [e for e in self.effects if e.status is EffectStatus.unknown]

    def effect(self, action_id: str) -> Effect | None:
        """The effect in flight with this action id (a settled one is in `closed_items`)."""
        return next((e for e in self.effects if e.action_id == action_id), None)

    def scope(self, scope_id: str) -> Scope | None:
        return next((s for s in self.scopes if s.id == scope_id), None)

    def approval_for(self, action_hash: str, now: datetime) -> Approval | None:
        """The unused, unexpired approval bound to exactly this action, if any."""
        return next((a for a in self.approvals if a.action_hash == action_hash and a.valid_at(now)), None)
