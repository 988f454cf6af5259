"""`TaskState`: the durable record of a run. What authorizes the next action lives here, never in
the transcript or a summary. Written only by compare-and-set (see `longrun.store`)."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import Enum
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

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


class Approval(_Strict):
    """A human's approval of one exact action (bound by `action_hash`), used once, expiring."""

    id: str = Field(min_length=1, max_length=200)
    scope: str = Field(min_length=1, max_length=200, description="the tool the approval covers")
    action_hash: Sha256
    approved_by: str = Field(min_length=1, max_length=200)
    approved_at: datetime
    expires_at: datetime
    used: bool = False

    def valid_at(self, now: datetime) -> bool:
        return not self.used and now < self.expires_at


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
    effects: list[Effect] = Field(default_factory=list)
    artifact_refs: list[ArtifactRef] = Field(default_factory=list)
    notes: list[ShortText] = Field(default_factory=list)
    updated_at: datetime = Field(default_factory=utcnow)

    def unknown_effects(self) -> list[Effect]:
        return [e for e in self.effects if e.status is EffectStatus.unknown]

    def effect(self, action_id: str) -> Effect | None:
        return next((e for e in self.effects if e.action_id == action_id), None)

    def approval_for(self, action_hash: str, now: datetime) -> Approval | None:
        """The unused, unexpired approval bound to exactly this action, if any."""
        return next((a for a in self.approvals if a.action_hash == action_hash and a.valid_at(now)), None)
