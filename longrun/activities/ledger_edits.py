"""The tool activities' pure helpers: how the effects ledger changes the task state (an intent,
an attempt counted, a settle), what the gate knows of earlier approvals, and the short argument
previews shown to humans. No I/O here: `longrun.activities.tools` reads and writes."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from longrun.models.gate import PriorApproval
from longrun.models.io import IntentInput
from longrun.models.state import Approval, Effect, EffectStatus, TaskState

PREVIEW_CHARS = 300


def preview(arguments: dict[str, Any]) -> dict[str, str]:
    """Short argument values for status and audit; the full arguments stay in the transcript."""
    out: dict[str, str] = {}
    for key, value in arguments.items():
        text = value if isinstance(value, str) else repr(value)
        out[key] = text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS] + f"... ({len(text)} chars)"
    return out


def clip_value(value: Any, limit: int = 600) -> str:
    text = value if isinstance(value, str) else repr(value)
    return repr(text) if len(text) <= limit else repr(text[:limit]) + f"... ({len(text)} chars)"


def prior_approval(state: TaskState, bound: list[Approval], ahash: str, now: datetime) -> PriorApproval:
    """What the run holds for this exact action besides a usable approval (`bound`: every
    approval bound to it, in the state or closed)."""
    if not bound or state.approval_for(ahash, now) is not None:
        return "none"
    return "used" if any(a.used for a in bound) else "expired"


def count_attempt(state: TaskState, action_id: str, attempt: int) -> TaskState:
    effects = [e.model_copy(update={"attempts": attempt}) if e.action_id == action_id else e for e in state.effects]
    return state.model_copy(update={"effects": effects})


def settled(state: TaskState, action_id: str, status: EffectStatus, external_id: str | None, detail: str) -> TaskState:
    effects = [
        e.model_copy(update={"status": status, "external_id": external_id, "detail": detail[:500]})
        if e.action_id == action_id
        else e
        for e in state.effects
    ]
    return state.model_copy(update={"effects": effects})


def with_intent(state: TaskState, inp: IntentInput, before: str | None) -> TaskState:
    """The state with the effect's intent (status unknown) recorded, and the approval or the
    scope use that covers it taken."""
    effect = Effect(
        action_id=inp.action_id, tool=inp.tool, status=EffectStatus.unknown, idempotency_key=inp.action_id, before=before,
    )
    approvals = state.approvals
    if inp.uses_approval:
        approvals = [
            a.model_copy(update={"used": True}) if a.action_hash == inp.action_hash and not a.used else a
            for a in approvals
        ]
    scopes = state.scopes
    if inp.scope_id is not None:
        scopes = [sc.model_copy(update={"uses": sc.uses + 1}) if sc.id == inp.scope_id else sc for sc in scopes]
    return state.model_copy(update={"effects": [*state.effects, effect], "approvals": approvals, "scopes": scopes})
