"""Audit event kinds, as a discriminated union on `kind`.

Every event is appended to the hash-chained `audit_events` table. Text in events is redacted of
secrets before it is stored (see `longrun.redact`)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from longrun.models.context import CompactionReport, Trigger
from longrun.models.gate import Verdict
from longrun.models.provider import Usage
from longrun.models.signed import Proof


class _Event(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RunStarted(_Event):
    kind: Literal["run_started"] = "run_started"
    model: str
    objective: str
    constraints: list[str]
    workspace: str
    approvers: list[str]


class StateCommitted(_Event):
    kind: Literal["state_committed"] = "state_committed"
    state_version: int
    actor: str
    reason: str


class ModelCalled(_Event):
    kind: Literal["model_called"] = "model_called"
    turn: int
    model: str
    transcript_seq: int = Field(description="seq of the assistant message this call appended")
    usage: Usage
    estimated_tokens: int
    calibrated_tokens: int
    stop_reason: str | None
    projection_version: int | None = None


class GateVerdict(_Event):
    kind: Literal["gate_verdict"] = "gate_verdict"
    action_id: str
    tool: str
    verdict: Verdict
    rule: str
    reason: str
    action_hash: str
    state_version: int


class ApprovalRequested(_Event):
    kind: Literal["approval_requested"] = "approval_requested"
    approval_id: str
    tool: str
    arguments: dict[str, Any]
    action_hash: str
    state_version: int


class ApprovalGranted(_Event):
    """A verified, signed approval written into the task state. `proof` is the signed record
    `audit --verify` re-checks; `original_action_hash` is set when the approver edited the call."""

    kind: Literal["approval_granted"] = "approval_granted"
    approval_id: str
    approver: str
    expires_at: datetime
    action_hash: str
    proof: Proof | None = None
    original_action_hash: str | None = None
    edit_id: int | None = None


class ApprovalRejected(_Event):
    kind: Literal["approval_rejected"] = "approval_rejected"
    approval_id: str
    approver: str
    reason: str
    action_hash: str | None = None
    proof: Proof | None = None


class BudgetRequested(_Event):
    """A run family reached its budget before a model call: the run waits for a signed raise
    (`longrun raise-budget`) or a rejection, which ends it."""

    kind: Literal["budget_requested"] = "budget_requested"
    request_id: str
    spent_usd: float
    limit_usd: float
    root_run_id: str


class BudgetWarning(_Event):
    """The run family has spent 80% of its budget (once per budget)."""

    kind: Literal["budget_warning"] = "budget_warning"
    spent_usd: float
    limit_usd: float


class BudgetDecided(_Event):
    """A verified, signed answer to a budget request: a raise (by `by_usd`) or a rejection."""

    kind: Literal["budget_decided"] = "budget_decided"
    request_id: str
    approver: str
    decision: Literal["raise", "reject"]
    by_usd: float = 0.0
    reason: str = ""
    proof: Proof | None = None


class ApprovalExpired(_Event):
    kind: Literal["approval_expired"] = "approval_expired"
    approval_id: str


class ApprovalRefused(_Event):
    """An approve/reject update that the validator refused (recorded, nothing else written)."""

    kind: Literal["approval_refused"] = "approval_refused"
    approval_id: str
    approver: str
    reason: str


class ApprovalFailed(_Event):
    """An approval whose grant could not be written (nothing was granted; the request stays
    answerable)."""

    kind: Literal["approval_failed"] = "approval_failed"
    approval_id: str
    approver: str
    reason: str


class ScopeGranted(_Event):
    """A verified, signed standing approval (`longrun grant`)."""

    kind: Literal["scope_granted"] = "scope_granted"
    scope_id: str
    approver: str
    tools: list[str]
    paths: list[str]
    max_uses: int
    expires_at: datetime
    proof: Proof


class ScopeUsed(_Event):
    """One action a scope covered (in the same audit batch as the effect's intent)."""

    kind: Literal["scope_used"] = "scope_used"
    scope_id: str
    action_id: str
    tool: str
    path: str
    action_hash: str
    uses_left: int


class ScopeEnded(_Event):
    """A scope stopped covering actions: revoked by a signed `revoke-grant` (`proof`), or a
    constraint arrived (`by` is then the instruction's actor)."""

    kind: Literal["scope_ended"] = "scope_ended"
    scope_id: str
    by: str
    reason: str
    proof: Proof | None = None


class EffectIntent(_Event):
    kind: Literal["effect_intent"] = "effect_intent"
    action_id: str
    tool: str
    attempt: int


class EffectSettled(_Event):
    kind: Literal["effect_settled"] = "effect_settled"
    action_id: str
    tool: str
    status: Literal["none", "confirmed", "unknown"]
    external_id: str | None = None
    how: Literal["ran", "reconciled"] = "ran"
    detail: str = ""


class ToolRan(_Event):
    kind: Literal["tool_ran"] = "tool_ran"
    tool: str
    call_id: str
    is_error: bool
    artifact_sha256: str | None = None
    output_bytes: int = 0
    summary: str = ""
    sandbox: str | None = Field(
        default=None, description="where a command ran: `bwrap (no network)`, `unshare (...)`, `none (...)`"
    )


class CompactionStarted(_Event):
    """A compaction activity began (one event per attempt, written before the pipeline runs), so
    a compaction that fails or whose worker dies mid-way is still in the audit. Its `compaction`
    event follows with the outcome."""

    kind: Literal["compaction_started"] = "compaction_started"
    trigger: Trigger
    turn: int
    base_state_version: int
    tokens_before_calibrated: int = Field(description="the request as it stands, rendered before hard enforcement")
    budget: int | None = Field(default=None, description="a lower budget than the policy's, after an overflow")
    attempt: int = 1


class CompactionDone(_Event):
    """A compaction's outcome: applied, summary_rejected, noop, stale, or failed (with `error`;
    nothing was written and the run went on with its previous projection)."""

    kind: Literal["compaction"] = "compaction"
    projection_version: int | None
    report: CompactionReport
    error: str | None = None


class ProviderContextManaged(_Event):
    """The provider cleared tool uses or compacted the context of one model call (`context.mode`
    provider / hybrid): what its answer reported, verbatim in `applied_edits`. The transcript is
    unchanged (a compaction block or item is kept on the assistant message `transcript_seq`);
    approvals and effects never come from what the provider compacted."""

    kind: Literal["provider_context"] = "provider_context"
    turn: int
    model: str
    mode: Literal["provider", "hybrid"]
    transcript_seq: int
    cleared_tool_uses: int = 0
    cleared_input_tokens: int = 0
    compacted: bool = False
    compaction_readable: bool = True
    summary_tokens: int | None = Field(default=None, description="longrun's summary kept beside an opaque compaction")
    applied_edits: list[dict[str, Any]] = Field(default_factory=list)


class Steered(_Event):
    kind: Literal["steered"] = "steered"
    text: str
    as_constraint: bool
    transcript_seq: int


class InstructionDropped(_Event):
    """A human's queued instruction (`say`) the run never applied: it ended (cancelled, a cap,
    a failure) before the turn boundary that would have. The instruction stays in the inbox; this
    says so, so nobody reads the run as having been told it."""

    kind: Literal["instruction_dropped"] = "instruction_dropped"
    instruction_id: int
    text: str
    as_constraint: bool
    reason: str


class RunControl(_Event):
    kind: Literal["run_control"] = "run_control"
    action: Literal["pause", "resume", "cancel", "continue_as_new"]
    by: str = "operator"


class OperatorRequest(_Event):
    """A person asked the run to pause, resume, cancel, compact or take an instruction from the
    console (or downloaded its evidence bundle: `export`), which checked their session and operator role first. Written by the console before it
    sends the update (or instead of it, when refused), so the audit names who asked; the
    workflow's own `run_control` / `steered` event follows when the run did it."""

    kind: Literal["operator_request"] = "operator_request"
    principal: str
    action: Literal["pause", "resume", "cancel", "say", "compact_now", "export"]
    outcome: Literal["sent", "refused"]
    reason: str = ""


class McpToolsListed(_Event):
    """The run's MCP servers were asked for their tools at its start. `listing_sha256` is the
    artifact holding what they said (descriptions, schemas, annotations: untrusted text, kept out
    of the audit); `skipped` says which tools (or servers) the run does not offer, and why."""

    kind: Literal["mcp_tools_listed"] = "mcp_tools_listed"
    listing_sha256: str
    tools: list[str]
    skipped: list[str] = Field(default_factory=list)


class ChangeSetOpened(_Event):
    """The run works on its own branch in a worktree of the workspace's git repository
    (longrun.workspace): its edits become commits there, the user's checkout is not touched."""

    kind: Literal["change_set_opened"] = "change_set_opened"
    repo: str
    branch: str
    base: str
    worktree: str
    workspace: str


class ChangeCommitted(_Event):
    """A confirmed file effect became a commit of the run's branch (`how`: right after the tool
    ran, or by reconcile after a crash between the write and the commit)."""

    kind: Literal["change_committed"] = "change_committed"
    action_id: str
    tool: str
    commit: str
    branch: str
    paths: list[str]
    how: Literal["ran", "reconciled"] = "ran"


class ForkedFrom(_Event):
    """This run is a fork (`longrun fork`): its task state is `parent_run_id`'s at `parent_version`
    (approvals, scopes and requests dropped; settled effects as history only), its transcript is
    the parent's through `parent_through_seq` by reference, and on git its branch starts at
    `commit`. The first event after `run_started` of a fork."""

    kind: Literal["forked_from"] = "forked_from"
    parent_run_id: str
    parent_version: int
    parent_through_seq: int
    commit: str | None = None
    model: str
    objective_replaced: bool = False
    by: str


class RunForked(_Event):
    """A fork of this run was made (`longrun fork`): the other side of `forked_from`."""

    kind: Literal["run_forked"] = "run_forked"
    fork_run_id: str
    at_version: int
    through_seq: int
    commit: str | None = None
    by: str


class RunFinished(_Event):
    kind: Literal["run_finished"] = "run_finished"
    status: Literal["completed", "failed", "cancelled"]
    reason: str


class RunRetention(_Event):
    """An operator pinned or unpinned a finished run, or `longrun prune` replaced its bodies by
    tombstones (`longrun.store.retention`). `pruned` counts the bodies per table, `bytes_freed`
    their bytes; `audit --verify` accepts a tombstone only in a run that has a `prune` event."""

    kind: Literal["retention"] = "retention"
    action: Literal["pin", "unpin", "prune"]
    by: str
    pruned: dict[str, int] = Field(default_factory=dict)
    bytes_freed: int = 0


class ErrorRecorded(_Event):
    kind: Literal["error"] = "error"
    where: str
    message: str


# ------------------------------------------------------------ notifications (docs/NOTIFICATIONS.md)
NotifyEvent = Literal["approval_requested", "approval_decided", "run_finished", "ask_human", "budget_requested",
                      "budget_warning"]
"""What a run tells its webhooks about."""


class NotificationAttempt(_Event):
    """One attempt to deliver a notification: the HTTP status the webhook answered, or the error.
    A webhook is named, and shown by `target` (its URL's scheme and host): its URL is a secret."""

    kind: Literal["notification_attempt"] = "notification_attempt"
    webhook: str
    event: NotifyEvent
    delivery_id: str
    attempt: int
    target: str
    outcome: Literal["delivered", "transient", "permanent"]
    status: int | None = None
    error: str | None = None
    retry_after: float | None = Field(default=None, description="seconds the webhook asked to wait (Retry-After)")


class NotificationDelivered(_Event):
    kind: Literal["notification_delivered"] = "notification_delivered"
    webhook: str
    event: NotifyEvent
    delivery_id: str
    attempts: int
    status: int
    target: str


class NotificationFailed(_Event):
    """A notification given up on (refused, attempts exhausted, timed out); the run is unaffected."""

    kind: Literal["notification_failed"] = "notification_failed"
    webhook: str
    event: NotifyEvent
    delivery_id: str
    reason: str
    attempts: int | None = None


AuditEvent = Annotated[
    RunStarted | StateCommitted | ModelCalled | GateVerdict | ApprovalRequested | BudgetRequested | BudgetWarning | BudgetDecided | ApprovalGranted | ApprovalRejected | ApprovalExpired | ApprovalRefused | ApprovalFailed | ScopeGranted | ScopeUsed | ScopeEnded | EffectIntent | EffectSettled | ToolRan | CompactionStarted | CompactionDone | ProviderContextManaged | Steered | InstructionDropped | RunControl | OperatorRequest | McpToolsListed | ChangeSetOpened | ChangeCommitted | ForkedFrom | RunForked | RunFinished | RunRetention | ErrorRecorded | NotificationAttempt | NotificationDelivered | NotificationFailed,
    Field(discriminator="kind"),
]

audit_event_adapter: TypeAdapter[AuditEvent] = TypeAdapter(AuditEvent)
