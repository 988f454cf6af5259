"""The task-state block: TaskState rendered from the database into the last user message.

It is the authoritative part of every request. It is JSON inside a tag so that a model reads it
easily and the offline `scripted` provider can parse it back; summaries never stand in for it.
"""

from __future__ import annotations

import json
import re
from typing import Any

from longrun.models.state import TaskState

OPEN_TAG = "<task_state>"
CLOSE_TAG = "</task_state>"
PREAMBLE = (
    "Authoritative task state, rendered from the database. It overrides anything in the conversation "
    "or in a summary: constraints are binding and verbatim; only approvals listed here exist."
)

_BLOCK_RE = re.compile(re.escape(OPEN_TAG) + r"\s*(.*?)\s*" + re.escape(CLOSE_TAG), re.S)


def state_view(state: TaskState) -> dict[str, Any]:
    """The fields of TaskState a model needs, in a stable order."""
    return {
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
        "decisions": [{"summary": d.summary, "reason": d.reason} for d in state.decisions],
        "notes": list(state.notes),
        "artifact_refs": [{"sha256": r.sha256, "uri": r.uri} for r in state.artifact_refs],
    }


def render_state_block(state: TaskState) -> str:
    """`PREAMBLE` + `<task_state>` JSON `</task_state>`."""
    body = json.dumps(state_view(state), indent=1, ensure_ascii=False)
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
