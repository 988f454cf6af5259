"""State tools: the model's only way to change `TaskState`.

Each `apply_state(state, args, now)` returns a changed *copy*; the caller writes it with
compare-and-set (and bumps `state_version`). By construction they touch only `decisions`,
`next_action`, `notes`, `current_step` and `updated_at`: never objective, constraints,
approvals, effects or artifact references. Text that says "APPROVED" stays text.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from longrun.errors import ToolError
from longrun.models.state import MAX_TEXT, Decision, NextAction, Step, TaskState
from longrun.tools.base import Tool

MAX_NOTES = 10_000
MAX_DECISIONS = 10_000

STEP_NEXT_ACTION: dict[Step, NextAction] = {
    Step.survey: NextAction.inspect,
    Step.investigate: NextAction.inspect,
    Step.fix: NextAction.edit,
    Step.verify: NextAction.test,
    Step.report: NextAction.stop,
    Step.done: NextAction.stop,
}
"""The next_action a run gets on entering a step through complete_stage."""


def _text(args: dict[str, Any], key: str, *, required: bool = True) -> str:
    value = args.get(key, "")
    if not isinstance(value, str):
        raise ToolError(f"'{key}' must be a string")
    if required and not value.strip():
        raise ToolError(f"'{key}' must not be empty")
    if len(value) > MAX_TEXT:
        raise ToolError(f"'{key}' is {len(value)} characters long; the limit is {MAX_TEXT}")
    return value


def _changed(state: TaskState, now: datetime, **changes: Any) -> TaskState:
    """A validated copy with `changes` applied (the original is left untouched)."""
    return TaskState.model_validate({**state.model_dump(), **changes, "updated_at": now})


def _record_decision(state: TaskState, args: dict[str, Any], now: datetime) -> TaskState:
    summary, reason = _text(args, "summary"), _text(args, "reason", required=False)
    if len(state.decisions) >= MAX_DECISIONS:
        raise ToolError(f"this run already holds {MAX_DECISIONS} decisions")
    decision = Decision(summary=summary, reason=reason, at=now)
    return _changed(state, now, decisions=[*(d.model_dump() for d in state.decisions), decision.model_dump()])


def _set_next_action(state: TaskState, args: dict[str, Any], now: datetime) -> TaskState:
    value = args.get("next_action")
    try:
        action = NextAction(value)
    except ValueError as exc:
        raise ToolError(f"'next_action' must be one of {[a.value for a in NextAction]}, got {value!r}") from exc
    return _changed(state, now, next_action=action)


def _write_note(state: TaskState, args: dict[str, Any], now: datetime) -> TaskState:
    text = _text(args, "text")
    if len(state.notes) >= MAX_NOTES:
        raise ToolError(f"this run already holds {MAX_NOTES} notes")
    return _changed(state, now, notes=[*state.notes, text])


def _complete_stage(state: TaskState, args: dict[str, Any], now: datetime) -> TaskState:
    summary = _text(args, "summary")
    if state.current_step is Step.done:
        raise ToolError("the run is already done; there is no stage left to complete")
    note = f"stage {state.current_step.value} complete: {summary}"
    if len(note) > MAX_TEXT:
        raise ToolError(f"'summary' is too long; keep it under {MAX_TEXT - 40} characters")
    step = state.current_step.following()
    return _changed(state, now, notes=[*state.notes, note], current_step=step, next_action=STEP_NEXT_ACTION[step])


def _text_prop(description: str) -> dict[str, Any]:
    return {"type": "string", "minLength": 1, "maxLength": MAX_TEXT, "description": description}


RECORD_DECISION = Tool(
    name="record_decision",
    description="Record a decision and its reason in the task state (kept verbatim, never summarized away).",
    input_schema={
        "type": "object",
        "properties": {
            "summary": _text_prop("the decision"),
            "reason": {"type": "string", "maxLength": MAX_TEXT, "description": "why"},
        },
        "required": ["summary", "reason"],
        "additionalProperties": False,
    },
    kind="state",
    apply_state=_record_decision,
)

SET_NEXT_ACTION = Tool(
    name="set_next_action",
    description=(
        "Declare what the run does next: inspect (read), edit (write files), test (run allowed commands), "
        "ask_human, or stop. Tools are allowed or refused according to it."
    ),
    input_schema={
        "type": "object",
        "properties": {"next_action": {"type": "string", "enum": [a.value for a in NextAction]}},
        "required": ["next_action"],
        "additionalProperties": False,
    },
    kind="state",
    apply_state=_set_next_action,
)

WRITE_NOTE = Tool(
    name="write_note",
    description="Append a note to the task state (a fact worth keeping across compaction).",
    input_schema={
        "type": "object",
        "properties": {"text": _text_prop("the note")},
        "required": ["text"],
        "additionalProperties": False,
    },
    kind="state",
    apply_state=_write_note,
)

COMPLETE_STAGE = Tool(
    name="complete_stage",
    description=(
        "Finish the current stage (survey, investigate, fix, verify, report) with a summary; the run moves "
        "to the next stage and its next_action follows (investigate: inspect, fix: edit, verify: test, "
        "report: stop)."
    ),
    input_schema={
        "type": "object",
        "properties": {"summary": _text_prop("what the stage found or did")},
        "required": ["summary"],
        "additionalProperties": False,
    },
    kind="state",
    apply_state=_complete_stage,
)
