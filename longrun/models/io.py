"""Typed inputs and results of the run workflow and its activities.

Only ids, versions, counters and short previews cross Temporal: transcript text, tool output and
state stay in Postgres, so workflow history stays small however long the run is.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from longrun.models.audit import AuditEvent
from longrun.models.context import CompactionReport, Trigger
from longrun.models.provider import Usage
from longrun.models.run import PendingApproval
from longrun.models.spec import RunCaps

Verdict = Literal["allow", "needs_approval", "deny"]


class _IO(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StateBrief(_IO):
    """The few state fields the workflow shows in `status`."""

    version: int
    step: str
    next_action: str


class RunCursor(_IO):
    """What survives continue-as-new: counters and the few things in flight."""

    turn: int = 0
    head_version: int = 1
    usage: Usage = Field(default_factory=Usage)
    model_calls: int = 0
    tool_calls: int = 0
    started_at: datetime | None = None
    last_compaction_turn: int | None = None
    last_compaction: CompactionReport | None = None
    paused: bool = False
    pending_says: list["SayInput"] = Field(default_factory=list)
    generation: int = 0


class AgentRunInput(_IO):
    run_id: str
    cursor: RunCursor | None = None


class AgentRunResult(_IO):
    run_id: str
    status: Literal["completed", "failed", "cancelled"]
    reason: str
    state_version: int
    turns: int
    usage: Usage


class SayInput(_IO):
    text: str = Field(min_length=1, max_length=20_000)
    constraint: bool = False


class ApproveInput(_IO):
    approval_id: str
    approver: str
    ttl_seconds: int | None = Field(default=None, ge=1, le=7 * 24 * 3600)


class RejectInput(_IO):
    approval_id: str
    approver: str
    reason: str = Field(min_length=1, max_length=2_000)


class RunRef(_IO):
    run_id: str


class LoadRunResult(_IO):
    approvers: list[str]
    caps: RunCaps
    continue_as_new_every: int
    approval_ttl_seconds: int
    model: str
    subagent_width: int = 4
    state: StateBrief
    status: str


class ReconcileResult(_IO):
    checked: int
    confirmed: int
    none: int
    undecidable: list[str]
    state: StateBrief


class ModelCallInput(_IO):
    run_id: str
    turn: int
    overflow_retry: int = 0
    limit_override: int | None = Field(
        default=None, ge=100, description="after a provider overflow: a lower ceiling for this request, in tokens"
    )
    limit_hard: int | None = Field(
        default=None, ge=100,
        description="after a provider overflow: the most its numbers admit, used when even the smallest request is over limit_override",
    )


class ToolCallRef(_IO):
    """A tool call by reference: its arguments stay in the transcript (entry `seq`)."""

    call_id: str
    name: str
    index: int
    seq: int


class ModelCallResult(_IO):
    assistant_seq: int
    tool_calls: list[ToolCallRef]
    stop_reason: str | None
    usage: Usage
    estimated_tokens: int
    calibrated_tokens: int
    replayed: bool = False


class GateInput(_IO):
    run_id: str
    turn: int
    call: ToolCallRef
    expected_version: int
    now: datetime
    proposed_version: int | None = Field(
        default=None, description="state_version at which the pending approval was proposed (bound in the hash)"
    )


class GateResult(_IO):
    verdict: Verdict
    rule: str
    reason: str
    action_id: str
    action_hash: str
    tool: str
    kind: Literal["read", "effect", "state", "delegate", "unknown"]
    arguments_preview: dict[str, Any] = Field(default_factory=dict)
    state_version: int


class RecordEventInput(_IO):
    run_id: str
    event: AuditEvent
    actor: str = "workflow"


class GrantInput(_IO):
    run_id: str
    approval_id: str
    approver: str
    action_hash: str
    tool: str
    approved_at: datetime
    expires_at: datetime


class IntentInput(_IO):
    run_id: str
    call: ToolCallRef
    action_id: str
    tool: str
    expected_version: int
    action_hash: str
    uses_approval: bool


class IntentResult(_IO):
    state_version: int
    attempt: int


class RunToolInput(_IO):
    run_id: str
    turn: int
    call: ToolCallRef
    action_id: str
    expected_version: int
    now: datetime


class ToolResultRef(_IO):
    """A tool's result by reference: the full text is the artifact (or a short error)."""

    call_id: str
    tool: str
    is_error: bool
    artifact_sha256: str | None = None
    error_text: str | None = Field(default=None, max_length=4_000)


class RunToolResult(_IO):
    result: ToolResultRef
    state: StateBrief
    effect_status: Literal["none", "confirmed", "unknown"] | None = None


class ChildInput(_IO):
    """A `task` call of the parent: the brief stays in the parent's transcript."""

    run_id: str
    turn: int
    call: ToolCallRef


class ChildCreated(_IO):
    child_run_id: str


class CollectChildInput(_IO):
    run_id: str
    child_run_id: str
    call: ToolCallRef
    failure: str | None = Field(default=None, max_length=2_000)


class ChildCollected(_IO):
    result: ToolResultRef
    usage: Usage


class CommitTurnInput(_IO):
    run_id: str
    turn: int
    assistant_seq: int
    results: list[ToolResultRef]
    last_compaction_turn: int | None = None
    stage_boundary: bool = False
    sent_tokens_estimated: int | None = Field(
        default=None, ge=0, description="the estimated size of the request this turn sent; None: render it again"
    )


class CommitTurnResult(_IO):
    transcript_seq: int | None
    state: StateBrief
    request_tokens_calibrated: int
    compaction_trigger: Trigger | None = None


class CompactInput(_IO):
    run_id: str
    turn: int
    base_state_version: int
    trigger: Trigger
    budget: int | None = Field(default=None, ge=100, description="a lower budget than the policy's, after an overflow")


class CompactResult(_IO):
    outcome: Literal["applied", "noop", "stale", "summary_rejected", "failed"]
    projection_version: int | None
    report: CompactionReport | None


class SteerInput(_IO):
    run_id: str
    text: str
    constraint: bool
    turn: int


class SteerResult(_IO):
    transcript_seq: int
    state: StateBrief


class AskHumanInput(_IO):
    run_id: str
    reason: str


class FinishInput(_IO):
    run_id: str
    status: Literal["completed", "failed", "cancelled"]
    reason: str


class StatusQueryResult(_IO):
    """What the `status` query answers (the CLI adds what only Postgres knows)."""

    run_id: str
    model: str = ""
    status: str
    state: StateBrief
    turn: int
    pending_approval: PendingApproval | None
    usage: Usage
    model_calls: int
    tool_calls: int
    last_compaction: CompactionReport | None
    reason: str
    children: list[str] = Field(default_factory=list)


RunCursor.model_rebuild()
