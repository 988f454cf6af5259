"""The invariant gate: the rules checked over the *persisted* state before a tool call.

Pure: the activity gathers the facts from Postgres and the workspace, this module decides.
Rules (docs/ARCHITECTURE.md, "Invariant gate"):

1. ``head``        the expected state_version is the head of this run;
2. ``objective``   the objective is the one the run started with;
3. ``step``        current_step is a known step;
4. ``approval``    the tool is allowed under next_action, and an effect that needs approval is
                   covered by an unused, unexpired approval bound to this exact action hash,
                   or (``scope``) by a standing approval whose tools, path globs, uses, expiry
                   and constraints cover it; either one only while the key that signed it is
                   still active (checked at each use, not only at the grant);
5. ``effects``     no effect is ``unknown`` (reconcile first); every effect is coherent;
6. ``artifacts``   every artifact reference points at stored content;
7. ``evidence``    what the action depends on is checked against the workspace now, not against
                   the transcript or a summary (the tool's own precondition check);
plus ``tool``: the tool's own checks (workspace confinement, command allow-list), and a subagent
(a read-only run) may call read tools only: no effects, no state changes, no grandchildren.
The first failing rule decides; every verdict is audited by the caller.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from longrun.models.gate import CallKind, GateRule, PriorApproval, Verdict
from longrun.models.state import EffectStatus, NextAction, Step, TaskState


@dataclass(frozen=True)
class GateFacts:
    """Everything the rules look at, gathered by the gate activity."""

    state: TaskState
    expected_version: int
    original_objective: str
    tool_name: str
    tool_kind: CallKind
    needs_approval: bool
    allowed_next_actions: frozenset[NextAction]
    action_hash: str
    now: datetime
    missing_artifacts: tuple[str, ...] = ()
    tool_check_error: str | None = None
    arguments_error: str | None = None
    prior_approval: PriorApproval = "none"
    read_only_run: bool = False
    scope_id: str | None = None
    """The standing approval (scope) that covers this call now, if one does."""
    scope_refusal: str = ""
    """Why the scopes naming this tool and path do not cover it ('' when none names them)."""
    approval_key_refusal: str = ""
    """Why the approval bound to this action must not be used although it is unused and unexpired:
    the key that signed it was revoked or has expired since ('' when it still vouches)."""


@dataclass(frozen=True)
class GateDecision:
    verdict: Verdict
    rule: GateRule
    reason: str


def _deny(rule: GateRule, reason: str) -> GateDecision:
    return GateDecision("deny", rule, reason)


def evaluate(f: GateFacts) -> GateDecision:
    """Apply the rules in order; the first that fails decides."""
    s = f.state
    if f.tool_kind == "unknown":
        return _deny(GateRule.tool, f.arguments_error or f"unknown tool {f.tool_name!r}")
    if f.arguments_error:
        return _deny(GateRule.tool, f.arguments_error)
    if f.read_only_run and f.tool_kind != "read":
        return _deny(GateRule.tool, f"a subagent may only read: {f.tool_name} is not a read-only tool")
    if f.tool_kind == "delegate":
        return GateDecision("allow", GateRule.delegate, "a subagent with read-only tools and its own caps")
    if f.tool_kind != "effect":
        # Read and state tools change nothing outside the run; they still must stay in the
        # workspace (the tool's own check) and state tools go through compare-and-set.
        if f.tool_check_error:
            return _deny(GateRule.tool, f.tool_check_error)
        return GateDecision("allow", GateRule.read if f.tool_kind == "read" else GateRule.state, "no external effect")

    if s.state_version != f.expected_version:
        return _deny(GateRule.head, f"state moved: expected version {f.expected_version}, head is {s.state_version}")
    if s.objective != f.original_objective:
        return _deny(GateRule.objective, "the objective differs from the one the run started with")
    step: object = s.current_step  # typed as a Step, but a state built without validation may hold anything
    if not isinstance(step, Step):
        return _deny(GateRule.step, f"unknown current_step {step!r}")
    if s.next_action not in f.allowed_next_actions:
        allowed = ", ".join(sorted(a.value for a in f.allowed_next_actions))
        return _deny(
            GateRule.approval,
            f"{f.tool_name} is not allowed while next_action is {s.next_action.value!r} (allowed under: {allowed}); "
            "call set_next_action first",
        )
    unknown = [e.action_id for e in s.effects if e.status is EffectStatus.unknown]
    if unknown:
        return _deny(GateRule.effects, f"unreconciled unknown effect(s): {', '.join(unknown)}; reconcile first")
    for e in s.effects:
        if e.idempotency_key != e.action_id:
            return _deny(GateRule.effects, f"effect {e.action_id} has idempotency key {e.idempotency_key}")
        if e.status is EffectStatus.confirmed and not e.external_id:
            return _deny(GateRule.effects, f"effect {e.action_id} is confirmed without an external id")
    if f.missing_artifacts:
        return _deny(GateRule.artifacts, f"artifact(s) missing from the store: {', '.join(f.missing_artifacts)}")
    if f.tool_check_error:
        return _deny(GateRule.evidence, f.tool_check_error)
    if f.needs_approval:
        if s.approval_for(f.action_hash, f.now) is not None:
            if f.approval_key_refusal:
                return _deny(GateRule.approval, f.approval_key_refusal)
            return GateDecision("allow", GateRule.approval, "covered by an unexpired approval bound to this action")
        if f.scope_id is not None:
            return GateDecision("allow", GateRule.scope, f"covered by the standing approval {f.scope_id}")
        if f.prior_approval == "expired":
            return _deny(GateRule.approval_expired, "the approval for this exact action has expired; it is never used")
        if f.prior_approval == "used":
            return _deny(GateRule.approval, "the approval for this exact action was already used; an approval is used once")
        why_not_scope = f" ({f.scope_refusal})" if f.scope_refusal else ""
        return GateDecision("needs_approval", GateRule.approval,
                            f"{f.tool_name} needs a human approval bound to this action{why_not_scope}")
    return GateDecision("allow", GateRule.effects, "effect allowed: state is current and every effect is settled")
