"""One turn of a scripted policy, and what a policy reads of the turns before it.

Shared by the parent policy, the child policy and the provider, so none of them imports another
for these. Everything here reads only the request: the scripted agent has no memory between
calls besides the task state and the transcript the workflow sends.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from longrun.context.state_block import OLDER_NOTES_KEY, parse_state_block
from longrun.context.summary import OPEN_TAG
from longrun.models.blocks import Message, ToolResultBlock, ToolUseBlock
from longrun.models.canonical import canonical_json
from longrun.models.provider import ModelRequest

AGENT_LABEL = "scripted agent (deterministic offline stand-in for a model)"


@dataclass(frozen=True)
class Call:
    name: str
    input: dict[str, Any]

    @property
    def signature(self) -> str:
        """How a refused call is recognised in a later `tool error:` note (so it is not repeated)."""
        return f"{self.name} {canonical_json(self.input)}"[:200]


@dataclass
class Turn:
    """What the agent does this turn: a sentence, tool calls, or a final report."""

    text: str
    calls: list[Call] = field(default_factory=list)
    final: bool = False
    parallel: bool = False  # the calls go out together, alone in their turn (subagents)


def result_text(result: ToolResultBlock) -> str:
    """A tool result's text, whether it came as a string or as content blocks."""
    if isinstance(result.content, str):
        return result.content
    parts = [str(c.get("text", "")) for c in result.content if isinstance(c, dict) and c.get("type") == "text"]
    return "\n".join(parts)


def short(text: str, limit: int = 160) -> str:
    """`text` on one line, cut to `limit` characters: notes and answers never carry file content."""
    one = " ".join(str(text).split())
    return one if len(one) <= limit else one[: limit - 3] + "..."


_NOTES_GROUP = re.compile(r"^### task notes\n((?:- .*\n?)+)", re.M)
_MARKS = re.compile(r"^- (?:\([^)]*\) )?")


def last_state(request: ModelRequest) -> dict[str, Any] | None:
    """The task state: the last `<task_state>` block of the last user message. When the block
    shows only the newest notes, the older ones are read back from the summary's fact ledger
    (its `note:` lines), as a model would read them there."""
    state: dict[str, Any] | None = None
    for message in reversed(request.messages):
        if message.role == "user":
            state = parse_state_block(message.text())
            break
    if state is None or not state.get(OLDER_NOTES_KEY) or not request.messages:
        return state
    first = request.messages[0].text() if request.messages[0].role == "user" else ""
    if OPEN_TAG in first:
        shown = list(state.get("notes") or [])
        group = _NOTES_GROUP.search(first)
        lines = group.group(1).splitlines() if group else []
        older = [n for n in (_MARKS.sub("", ln, count=1) for ln in lines) if n and n not in shown]
        state["notes"] = older + shown
    return state


def last_results(request: ModelRequest) -> list[tuple[ToolUseBlock, ToolResultBlock]]:
    """(tool_use, tool_result) pairs of the agent's previous turn, in call order."""
    msgs = request.messages
    if len(msgs) < 2 or msgs[-1].role != "user" or msgs[-2].role != "assistant":
        return []
    results = {r.tool_use_id: r for r in msgs[-1].tool_results()}
    return [(u, results[u.id]) for u in msgs[-2].tool_uses() if u.id in results]


def transcript_pairs(messages: list[Message]) -> list[tuple[ToolUseBlock, ToolResultBlock]]:
    """Every (tool_use, tool_result) pair of the transcript, in order (a child keeps no state, so
    it rereads its own short transcript every turn)."""
    out: list[tuple[ToolUseBlock, ToolResultBlock]] = []
    for i, message in enumerate(messages[:-1]):
        if message.role != "assistant":
            continue
        nxt = messages[i + 1]
        results = {r.tool_use_id: r for r in nxt.tool_results()} if nxt.role == "user" else {}
        out += [(u, results[u.id]) for u in message.tool_uses() if u.id in results]
    return out
