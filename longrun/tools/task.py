"""`task`: hand a self-contained brief to a subagent, a child run with a clean context.

The workflow runs it (there is no `run` here): it starts a child AgentRunWorkflow with read-only
tools, the parent's constraints and its own caps, and returns the child's short FINDINGS /
UNCERTAIN answer as the tool result. Several `task` calls in one turn run in parallel.
"""

from __future__ import annotations

from longrun.tools.base import Tool

MAX_BRIEF_CHARS = 8_000
MAX_PATHS = 50

TASK = Tool(
    name="task",
    description=(
        "Delegate a breadth-first investigation to a subagent with a clean context and read-only tools. "
        "Give a self-contained brief (what to look for and why) and optionally the files to cover. "
        "It answers with FINDINGS (one line each, with its source) and UNCERTAIN, at most 400 words. "
        "Call it several times in one turn to investigate in parallel. Do one or two reads yourself instead."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "brief": {"type": "string", "minLength": 1, "maxLength": MAX_BRIEF_CHARS},
            "paths": {"type": "array", "items": {"type": "string", "maxLength": 1000}, "maxItems": MAX_PATHS},
        },
        "required": ["brief"],
        "additionalProperties": False,
    },
    kind="delegate",
)
