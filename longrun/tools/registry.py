"""The tool registry: which tools a run (or a subagent) may call, and their argument checks.

A worker adds its own tools before it starts. A custom effect tool needs `run`, `reconcile`
(how to tell, after a crash, whether the effect happened) and usually `check`; set
`allowed_next_actions` too (the default allows it under every next_action)::

    from longrun.tools import ReconcileOutcome, Tool, ToolOutcome, default_registry
    from longrun.models.state import NextAction

    def send(args, ctx):
        message_id = outbox.send(args["to"], args["text"], idempotency_key=ctx.action_id)
        return ToolOutcome(text=f"sent {message_id}", external_id=message_id)

    def reconcile(args, ctx):
        sent = outbox.find(idempotency_key=ctx.action_id)
        return ReconcileOutcome("confirmed", external_id=sent.id) if sent else ReconcileOutcome("none")

    registry = default_registry()
    registry.register(Tool(
        name="send_message",
        description="Send a message to the on-call channel.",
        input_schema={
            "type": "object",
            "properties": {"to": {"type": "string", "maxLength": 200}, "text": {"type": "string"}},
            "required": ["to", "text"],
        },
        kind="effect", needs_approval=True, run=send, reconcile=reconcile,
        allowed_next_actions=frozenset({NextAction.edit}),
    ))

Registration checks the declaration (name shape, schema keywords the validator implements, the
callables its kind needs) so a mistake shows up when the worker starts, not mid-run.
"""

from __future__ import annotations

import re
from typing import Any

from longrun.errors import ToolError
from longrun.models.provider import ToolSpec
from longrun.tools.artifacts import READ_ARTIFACT
from longrun.tools.base import Tool
from longrun.tools.commands import RUN_COMMAND
from longrun.tools.files import LIST_DIR, READ_FILE, WRITE_FILE
from longrun.tools.fs_tools import DELETE_PATH, GLOB, MAKE_DIR, MOVE_PATH
from longrun.tools.patch import APPLY_PATCH
from longrun.tools.recall import RECALL
from longrun.tools.schema import SchemaViolation, check_schema, validate
from longrun.tools.search import GREP
from longrun.tools.state_tools import COMPLETE_STAGE, RECORD_DECISION, SET_NEXT_ACTION, WRITE_NOTE
from longrun.tools.task import TASK

TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
MALFORMED_ARGUMENTS = "longrun_malformed_arguments"
"""The only key of a call's input when the model's server sent arguments that are not a JSON
object (longrun.providers.openai_common.parse_arguments): refused here with what was sent, so the
model gets an error tool result and the run goes on."""
"""What the Anthropic API accepts as a tool name."""

BUILTIN_TOOLS: tuple[Tool, ...] = (
    LIST_DIR,
    READ_FILE,
    GLOB,
    GREP,
    READ_ARTIFACT,
    RECALL,
    WRITE_FILE,
    APPLY_PATCH,
    MOVE_PATH,
    DELETE_PATH,
    MAKE_DIR,
    RUN_COMMAND,
    RECORD_DECISION,
    SET_NEXT_ACTION,
    WRITE_NOTE,
    COMPLETE_STAGE,
    TASK,
)


def _declaration_problem(tool: Tool) -> str | None:
    if not TOOL_NAME.match(tool.name):
        return "its name must match ^[a-zA-Z0-9_-]{1,64}$"
    if tool.input_schema.get("type") != "object":
        return "its input_schema must have type 'object'"
    try:
        check_schema(tool.input_schema)
    except (ValueError, re.error) as exc:
        return f"its input_schema is not supported: {exc}"
    if tool.kind in ("read", "effect") and tool.run is None:
        return f"a {tool.kind} tool needs `run`"
    if tool.kind == "effect" and tool.reconcile is None:
        return "an effect tool needs `reconcile`"
    if tool.kind == "state" and tool.apply_state is None:
        return "a state tool needs `apply_state`"
    return None


class ToolRegistry:
    """Tools by name, in registration order (the order the model sees them in)."""

    def __init__(self, tools: list[Tool] | tuple[Tool, ...] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        """Add a tool.

        Raises:
            ValueError: a tool with this name exists, or the declaration is incomplete.
        """
        if tool.name in self._tools:
            raise ValueError(f"a tool named {tool.name!r} is already registered")
        problem = _declaration_problem(tool)
        if problem:
            raise ValueError(f"cannot register tool {tool.name!r}: {problem}")
        self._tools[tool.name] = tool

    def get(self, name: str) -> Tool:
        """The tool called `name`.

        Raises:
            ToolError: no such tool; the message lists the available ones.
        """
        try:
            return self._tools[name]
        except (KeyError, TypeError):
            raise ToolError(f"unknown tool {name!r}; available: {', '.join(self._tools) or 'none'}") from None

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def names(self) -> list[str]:
        return list(self._tools)

    def specs(self, *, read_only: bool = False) -> list[ToolSpec]:
        """What the model is told about the tools (only the read tools when `read_only`)."""
        return [t.spec() for t in self._tools.values() if not read_only or t.kind == "read"]

    def validate_arguments(self, name: str, arguments: Any) -> dict[str, Any]:
        """Check a call's arguments against the tool's input schema.

        Returns:
            A shallow copy of `arguments`, unchanged: defaults are not filled in, so an action hash
            computed over the result equals one computed over what the model sent.

        Raises:
            ToolError: unknown tool, or arguments refused; the message names the field.
        """
        tool = self.get(name)
        if not isinstance(arguments, dict):
            raise ToolError(f"invalid arguments for {name}: expected an object, got {type(arguments).__name__}")
        if isinstance(arguments.get(MALFORMED_ARGUMENTS), str):
            raise ToolError(f"invalid arguments for {name}: the call's arguments were {arguments[MALFORMED_ARGUMENTS]}; "
                            "call the tool again with its arguments as one JSON object")
        try:
            validate(arguments, tool.input_schema)
        except SchemaViolation as exc:
            raise ToolError(f"invalid arguments for {name}: {exc}") from exc
        return dict(arguments)

    def read_only(self) -> ToolRegistry:
        """A copy holding only the read tools (for subagents)."""
        return ToolRegistry([t for t in self._tools.values() if t.kind == "read"])


def default_registry() -> ToolRegistry:
    """A new registry with every built-in tool (a fresh one per call: registering custom tools in it
    changes nobody else's)."""
    return ToolRegistry(BUILTIN_TOOLS)
