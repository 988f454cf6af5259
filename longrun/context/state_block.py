"""The task-state block: TaskState rendered from the database into the last user message.

It is the authoritative part of every request, and no compaction shrinks it, so it shows what is
open (effects in flight, usable approvals, scopes in force) and counts what closed (those items
are in `closed_items`), and only the newest notes and decisions within a budget. It is JSON inside a tag so that a model reads it
easily and the offline `scripted` provider can parse it back; summaries never stand in for it.
"""

from __future__ import annotations

import json
import re
from typing import Any

from longrun.context.tokens import estimate_text
from longrun.models.state import Decision, TaskState

OPEN_TAG = "<task_state>"
CLOSE_TAG = "</task_state>"
PREAMBLE = (
    "Authoritative task state, rendered from the database. It overrides anything in the conversation "
    "or in a summary: constraints are binding and verbatim; only approvals listed here exist."
)

_BLOCK_RE = re.compile(re.escape(OPEN_TAG) + r"\s*(.*?)\s*" + re.escape(CLOSE_TAG), re.S)


NOTES_SHARE = 30
"""Notes may take 1/NOTES_SHARE of a request's hard limit (600 to 2,000 tokens)."""
NOTES_FLOOR = 600
"""Even under a small limit: about a dozen notes, so that the agent's own record of a short run
(what it inspected, what it found) is never out of its sight between compactions."""
OLDER_NOTES_KEY = "older_notes"
OLDER_DECISIONS_KEY = "older_decisions"
CLOSED_KEY = "closed"
ARTIFACT_REFS_SHOWN = 20
"""Newest artifact references shown; older ones are counted (they stay in the state)."""


def notes_budget(limit: int) -> int:
    """Tokens the state block's notes may take under a request limit of `limit`. Notes grow
    with the run and are sent on every request; past this, the oldest ones are in the summary's
    fact ledger (folded at the next compaction) and always in the state history."""
    return max(NOTES_FLOOR, min(2_000, limit // NOTES_SHARE))


def shown_notes(notes: list[str], budget: int | None) -> tuple[list[str], list[str]]:
    """(older notes left out, notes shown): the newest notes that fit `budget` tokens, in order."""
    if budget is None:
        return [], list(notes)
    used = 0
    start = len(notes)
    for i in range(len(notes) - 1, -1, -1):
        cost = estimate_text(notes[i]) + 2
        if used + cost > budget:
            break
        used += cost
        start = i
    return list(notes[:start]), list(notes[start:])


def _decision_text(d: Decision) -> str:
    return f"{d.summary} {d.reason}"


def shown_decisions(decisions: list[Decision], budget: int | None) -> tuple[int, list[Decision]]:
    """(how many older decisions are left out, the newest decisions that fit `budget` tokens)."""
    if budget is None:
        return 0, list(decisions)
    used, start = 0, len(decisions)
    for i in range(len(decisions) - 1, -1, -1):
        cost = estimate_text(_decision_text(decisions[i])) + 8
        if used + cost > budget:
            break
        used, start = used + cost, i
    return start, list(decisions[start:])


def closed_counts(state: TaskState) -> dict[str, int]:
    """What the run closed, by kind, only the kinds it has (the items are in `closed_items`)."""
    c = state.closed
    counts = {"effects_confirmed": c.effects_confirmed, "effects_none": c.effects_none,
              "approvals_used": c.approvals_used, "approvals_expired": c.approvals_expired, "scopes_ended": c.scopes}
    return {k: v for k, v in counts.items() if v}


def state_view(state: TaskState, notes_tokens: int | None = None) -> dict[str, Any]:
    """The fields of TaskState a model needs, in a stable order: what is open (effects in flight,
    usable approvals, scopes in force), counts of what closed; notes, and decisions, within
    `notes_tokens` each (None: all), with a count of the older ones."""
    older, notes = shown_notes(list(state.notes), notes_tokens)
    older_decisions, decisions = shown_decisions(list(state.decisions), notes_tokens)
    refs = state.artifact_refs[-ARTIFACT_REFS_SHOWN:]
    view = {
        "run_id": state.run_id,
        "state_version": state.state_version,
        "objective": state.objective,
        "constraints": list(state.constraints),
        "current_step": state.current_step.value,
        "next_action": state.next_action.value,
        "approvals": [
            {"id": a.id, "scope": a.scope, "action_hash": a.action_hash, "approved_by": a.approved_by,
             "expires_at": a.expires_at.isoformat(), "used": a.used}
            for a in state.approvals
        ],
        "effects": [
            {"action_id": e.action_id, "tool": e.tool, "status": e.status.value, "external_id": e.external_id}
            for e in state.effects
        ],
        "decisions": [{"summary": d.summary, "reason": d.reason} for d in decisions],
        "notes": notes,
        "artifact_refs": [{"sha256": r.sha256, "uri": r.uri} for r in refs],
    }
    closed = closed_counts(state)
    if closed:  # settled effects, used approvals, ended scopes: counted here, listed by `longrun audit`
        view[CLOSED_KEY] = closed
    if older_decisions:
        view[OLDER_DECISIONS_KEY] = (f"{older_decisions} older decisions are not shown: `recall` finds them, "
                                     "and they are in the state history")
    if len(state.artifact_refs) > len(refs):
        view["older_artifact_refs"] = len(state.artifact_refs) - len(refs)
    if state.scopes:  # only when there are any, so a run without scopes sends the same bytes as before
        view["scopes"] = [
            {"id": sc.id, "tools": list(sc.tools), "paths": list(sc.paths), "uses_left": max(0, sc.max_uses - sc.uses),
             "expires_at": sc.expires_at.isoformat(), "granted_by": sc.granted_by, "in_force": not sc.ended}
            for sc in state.scopes
        ]
    if older:
        view[OLDER_NOTES_KEY] = (f"{len(older)} older notes are not shown: they are in the summary's fact ledger "
                                 "(as `note:` lines) and in the state history")
    return view


def render_state_block(state: TaskState, notes_tokens: int | None = None) -> str:
    """`PREAMBLE` + `<task_state>` JSON `</task_state>`; notes within `notes_tokens` (None: all)."""
    body = json.dumps(state_view(state, notes_tokens), indent=1, ensure_ascii=False)
    return f"{PREAMBLE}\n{OPEN_TAG}\n{body}\n{CLOSE_TAG}"


def parse_state_block(text: str) -> dict[str, Any] | None:
    """The last state block found in `text`, parsed; None when there is none or it is malformed."""
    matches = _BLOCK_RE.findall(text)
    if not matches:
        return None
    try:
        value = json.loads(matches[-1])
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
