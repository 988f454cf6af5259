"""Typed inputs and results of the run workflow and its activities.

Only ids, versions, counters and short previews cross Temporal: transcript text, tool output and
state stay in Postgres, so workflow history stays small however long the run is.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from longrun.models.audit import AuditEvent, NotifyEvent
from longrun.models.context import CompactionReport, Trigger
from longrun.models.gate import CallKind, GateRule, Verdict
from longrun.models.provider import Usage
from longrun.models.run import PendingApproval
from longrun.models.signed import Proof
from longrun.models.spec import RunCaps

FinalStatus = Literal["completed", "failed", "cancelled"]


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
    stage_boundary_deferred: bool = Field(
        default=False, description="a stage boundary fell on the turn right after a compaction: the next commit asks again"
    )
    paused: bool = False
    pending_says: list[SayInput] = Field(
        default_factory=list, description="instructions queued for the next turn boundary, by id"
    )
    generation: int = 0
    notifications: list[NotifyInput] = Field(
        default_factory=list, description="deliveries still in flight at continue-as-new, restarted by the next run"
    )
    budget_warned_usd: float | None = Field(default=None, description="the budget whose 80% warning was given")


class AgentRunInput(_IO):
    run_id: str
    cursor: RunCursor | None = None


class AgentRunResult(_IO):
    run_id: str
    status: FinalStatus
    reason: str
    state_version: int
    turns: int
    usage: Usage


class SayInput(_IO):
    """A human instruction, by reference: the client stores its text in Postgres first
    (`Store.queue_instruction`) and the update carries only the id, so the text never enters
    workflow history. `text` is read only from histories recorded before that change."""

    instruction_id: int | None = Field(default=None, ge=1)
    constraint: bool = False
    text: str | None = Field(default=None, min_length=1, max_length=20_000)


class ApproveInput(_IO):
    """An approval: the principal's signed decision record (`proof`, verified by the grant
    activity against the registered key) and, for `approve --edit`, the id of the stored edit.
    Histories recorded before signed decisions carry no proof."""

    approval_id: str
    approver: str
    ttl_seconds: int | None = Field(default=None, ge=1, le=7 * 24 * 3600)
    proof: Proof | None = None
    edit_id: int | None = Field(default=None, ge=1)


class RejectInput(_IO):
    approval_id: str
    approver: str
    reason: str = Field(min_length=1, max_length=2_000)
    proof: Proof | None = None


class ScopeInput(_IO):
    """A standing approval (`longrun grant`) or its end (`longrun revoke-grant`), signed."""

    approver: str
    proof: Proof


class ScopeGrantInput(_IO):
    run_id: str
    approver: str
    proof: Proof


class RejectApprovalInput(_IO):
    run_id: str
    approval_id: str
    approver: str
    action_hash: str
    reason: str
    proof: Proof | None = None
    requested_at: datetime | None = Field(default=None, description="when the approval was requested (the span's wait)")


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
    webhooks: list[str] = Field(
        default_factory=list, description="names of the webhooks to notify: the spec's and the workers' defaults"
    )
    mcp_listing_needed: bool = Field(
        default=False, description="the spec names MCP servers whose tools this run has not listed yet"
    )
    tools_recorded: bool = Field(
        default=False, description="`start_run` recorded the run's tool list (or found it): no `record_run_tools`"
    )
    change_set_done: bool = Field(
        default=False, description="`start_run` opened the run's change set, or found none to open"
    )


class StartRunInput(_IO):
    """What `start_run` needs: the run, and whether this is its first start (not a later generation)."""

    run_id: str
    first_start: bool = False


class RunToolsResult(_IO):
    """What `record_run_tools` recorded: the hash of the run's tool list and how many tools this
    call recorded (0: the run had its list already; the list itself stays in Postgres)."""

    tools_sha256: str
    tools: int
    state: StateBrief


class McpListResult(_IO):
    """What `list_mcp_tools` stored: the listing's artifact hash and counts (the tools' text stays in
    Postgres)."""

    listing_sha256: str
    tools: int
    skipped: int
    state: StateBrief


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
    assistant_tokens: int | None = Field(default=None, description="the appended assistant message's token estimate")


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
    rule: GateRule
    reason: str
    action_id: str
    action_hash: str
    tool: str
    kind: CallKind
    arguments_preview: dict[str, Any] = Field(default_factory=dict)
    state_version: int = Field(description="the head version the gate checked the call against")
    scope_id: str | None = Field(default=None, description="the standing approval that covers the call, if one does")


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
    proof: Proof | None = None
    state_version: int | None = Field(default=None, description="the version the action was proposed at")
    call: ToolCallRef | None = None
    edit_id: int | None = None
    requested_at: datetime | None = Field(default=None, description="when the approval was requested (the span's wait)")


class IntentInput(_IO):
    run_id: str
    call: ToolCallRef
    action_id: str
    tool: str
    expected_version: int = Field(
        description="the version the gate checked: the intent is written on it or not at all (compare-and-set)"
    )
    action_hash: str
    uses_approval: bool
    scope_id: str | None = Field(default=None, description="the standing approval whose use this intent takes")


class IntentResult(_IO):
    """`written`: the intent is in the state at `state_version` (also when an earlier attempt of
    this call wrote it). `stale`: the head moved past the version the gate checked; nothing was
    written and the call goes back through the gate, on the head `state` names."""

    state_version: int
    attempt: int
    outcome: Literal["written", "stale"] = "written"
    state: StateBrief | None = None


class RunToolInput(_IO):
    run_id: str
    turn: int
    call: ToolCallRef
    action_id: str
    expected_version: int = Field(
        description="the version a state tool writes on (the one the gate checked, or the intent's for an effect)"
    )
    now: datetime


class ToolResultRef(_IO):
    """A tool's result by reference: the full text is the artifact (or a short error)."""

    call_id: str
    tool: str
    is_error: bool
    artifact_sha256: str | None = None
    error_text: str | None = Field(default=None, max_length=4_000)


class RunToolResult(_IO):
    """`stale`: a state tool found the head past `expected_version`; nothing ran and the call goes
    back through the gate."""

    result: ToolResultRef
    state: StateBrief
    effect_status: Literal["none", "confirmed", "unknown"] | None = None
    outcome: Literal["ran", "stale"] = "ran"


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
    assistant_tokens: int | None = Field(
        default=None, ge=0, description="the turn's assistant message's token estimate; None: read it back"
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
    """An instruction to apply at a turn boundary: by id (`instruction_id`, read from Postgres);
    `text` only in histories recorded before instructions were stored first."""

    run_id: str
    constraint: bool
    turn: int
    instruction_id: int | None = Field(default=None, ge=1)
    text: str | None = None


class SteerResult(_IO):
    transcript_seq: int
    state: StateBrief


class AskHumanInput(_IO):
    run_id: str
    reason: str


class FinishInput(_IO):
    run_id: str
    status: FinalStatus
    reason: str
    dropped_instructions: list[int] = Field(default_factory=list)
    """Ids of queued instructions (`say`) the run ends without applying: each is audited as
    `instruction_dropped` before `run_finished`."""


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


class ToolStepInput(_IO):
    """One tool call in one round trip: gate, and when the gate allows it without a human, the
    effect's intent and the run."""

    run_id: str
    turn: int
    call: ToolCallRef
    expected_version: int = Field(description="the head version the workflow holds")
    now: datetime


class ToolStepResult(_IO):
    """`ran` is set when the call ran; otherwise `gate` says why not (a denial, or an approval
    the workflow must wait for)."""

    gate: GateResult
    ran: RunToolResult | None = None


class TurnInput(_IO):
    """The model's turn in one round trip: the previous turn's results committed first (and
    compaction decided), the ledger reconciled, then the model call."""

    run_id: str
    turn: int
    commit: CommitTurnInput | None = Field(default=None, description="the previous turn's results, not yet committed")
    operator_compact: bool = False
    overflow_retry: int = 0
    limit_override: int | None = Field(default=None, ge=100)
    limit_hard: int | None = Field(default=None, ge=100)


class TurnResult(_IO):
    """`called`: the model answered (`model`). `compact`: the commit says compaction fires first
    (the model was not called). `undecidable`: an effect nobody can decide; the run asks a human.
    `budget`: the family's budget is reached (`budget`). `cap`: the run's token cap is reached,
    counted in the spend ledger (`cap` says so); the run ends failed. Neither called the model."""

    outcome: Literal["called", "compact", "undecidable", "budget", "cap"]
    state: StateBrief
    commit: CommitTurnResult | None = None
    trigger: Trigger | None = None
    undecidable: list[str] = Field(default_factory=list)
    model: ModelCallResult | None = None
    budget: BudgetCheck | None = Field(default=None, description="the family's spend against its budget, when it has one")
    cap: str = Field(default="", description="why the run may not call its model again (outcome `cap`)")


class BudgetCheck(_IO):
    """A run family's spend against its budget, read from the ledger before a model call.
    `reached`: the model was not called; the run waits for a signed raise. `refusal`: the budget
    cannot be held (a model with no price): the run ends with this reason."""

    spent_usd: float
    limit_usd: float
    root_run_id: str
    reached: bool = False
    warn: bool = False
    request_id: str = ""
    refusal: str = ""


class BudgetDecisionInput(_IO):
    """A signed answer to a budget request, for the activity that verifies and records it."""

    run_id: str
    request_id: str
    approver: str
    decision: Literal["raise", "reject"]
    by_usd: float = 0.0
    reason: str = ""
    proof: Proof | None = None


class BudgetInput(_IO):
    """The `raise_budget` update: `longrun raise-budget RUN --by USD` (or `--reject`), signed."""

    request_id: str
    approver: str
    decision: Literal["raise", "reject"]
    by_usd: float = Field(default=0.0, ge=0)
    reason: str = ""
    proof: Proof | None = None


class ApprovalDecision(_IO):
    """A human's answer to the pending approval, as the workflow holds it until the wait ends."""

    verdict: Literal["approved", "rejected"]
    approver: str
    reason: str = ""


# ------------------------------------------------------------ notifications (docs/NOTIFICATIONS.md)
class NotifyInput(_IO):
    """One notification to one webhook, by reference: the webhook by name (its URL and secret
    are in the worker's environment) and the event by ids; the body is built from Postgres."""

    run_id: str
    webhook: str = Field(pattern=r"^[a-z][a-z0-9_]{0,39}$")
    event: NotifyEvent
    delivery_id: str = Field(min_length=1, max_length=64, description="the same on every attempt, for deduplication")
    approval_id: str | None = Field(default=None, max_length=64)


class NotifyResult(_IO):
    status: int
    attempts: int


RunCursor.model_rebuild()
IntentResult.model_rebuild()
