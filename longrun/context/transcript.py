"""Structure of a conversation as the pipeline needs it: tool pairs, safe cut points, turns,
internal `longrun_*` keys, and the references that stand in for cleared content."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from longrun.models.blocks import Block, Message, TextBlock, ToolResultBlock, ToolUseBlock, block_adapter
from longrun.models.canonical import canonical_json, sha256_hex

INTERNAL_PREFIX = "longrun_"
ARTIFACT_KEY = "longrun_artifact"
TOOL_KEY = "longrun_tool"
CLEARED_KEY = "longrun_cleared"
"""Set on a tool_result whose content a stage replaced by a reference: "trim" or "microcompact"."""
ORIGINAL_TOKENS_KEY = "longrun_original_tokens"
FACTS_KEY = "longrun_facts"
"""On a cleared result: the fact lines the ledger would quote from it (`ledger.facts_to_keep`)."""
REF_HEX = 12
"""Hex digits of an artifact hash a reference shows: the shortest prefix read_artifact resolves
(`Store.resolve_artifact_prefix`). The block's `longrun_artifact` key keeps the full hash."""


def extra(block: Any, key: str) -> Any:
    """An internal (extra) field of a block, or None."""
    return (block.model_extra or {}).get(key)


def strip_internal(message: Message) -> dict[str, Any]:
    """The wire form of a message without any `longrun_*` key, at any depth of its blocks."""
    return {"role": message.role, "content": [_strip(b.model_dump(mode="json", exclude_none=True)) for b in message.content]}


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if not k.startswith(INTERNAL_PREFIX)}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def clean_message(message: Message) -> Message:
    """`message` without internal keys, as a Message (what a request carries)."""
    if not any(b.model_extra for b in message.content) and not any(
        isinstance(b, ToolResultBlock) and isinstance(b.content, list) for b in message.content
    ):
        return message
    return Message.model_validate(strip_internal(message))


def result_text(block: ToolResultBlock) -> str:
    """The full content of a tool result as one string: what its artifact holds offline."""
    if isinstance(block.content, str):
        return block.content
    if all(c.get("type") == "text" for c in block.content):
        return "\n".join(str(c.get("text", "")) for c in block.content)
    return canonical_json(block.content)


def artifact_sha(block: ToolResultBlock) -> str:
    """The artifact holding a result's full output: the one the tool activity recorded
    (`longrun_artifact`), else the sha256 of the content (offline, no store)."""
    sha = extra(block, ARTIFACT_KEY)
    return sha if isinstance(sha, str) and sha else sha256_hex(result_text(block))


def input_preview(tool_input: dict[str, Any], limit: int = 300) -> str:
    text = json.dumps(tool_input, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def reference_text(tool: str, tool_input: dict[str, Any], sha: str, tokens: int, why: str) -> str:
    """What a cleared result says instead of its content: the tool, its input, the artifact
    and how to read it back."""
    short = sha[:REF_HEX]
    return (
        f"[{why}: result of {tool}({input_preview(tool_input)}), about {tokens} tokens. "
        f"Full output: read_artifact {{\"sha256\": \"{short}\"}}]"
    )


def replace_result(block: ToolResultBlock, content: str, *, tool: str, sha: str, tokens: int, stage: str,
                   keep_facts: Sequence[str] = ()) -> ToolResultBlock:
    data = block.model_dump(mode="json", exclude_none=True)
    data.update({"content": content, ARTIFACT_KEY: sha, TOOL_KEY: tool, CLEARED_KEY: stage, ORIGINAL_TOKENS_KEY: tokens})
    if keep_facts:
        data[FACTS_KEY] = list(keep_facts)
    return ToolResultBlock.model_validate(data)


def is_cleared(block: Any) -> bool:
    return isinstance(block, ToolResultBlock) and extra(block, CLEARED_KEY) is not None


def tool_uses_by_id(messages: Sequence[Message]) -> dict[str, ToolUseBlock]:
    return {b.id: b for m in messages for b in m.content if isinstance(b, ToolUseBlock)}


def is_human(message: Message) -> bool:
    """A user message carrying text (the human's words, possibly beside tool results)."""
    return message.role == "user" and any(isinstance(b, TextBlock) for b in message.content)


def cut_points(messages: Sequence[Message]) -> list[bool]:
    """`ok[i]` is True when the conversation may be cut just before message i (everything
    before it is dropped or summarized) without orphaning a tool_use or a tool_result: no pair
    spans the cut. `ok[len]` is always True. A cut before a user message that carries tool
    results is never safe (their tool_use is before it)."""
    n = len(messages)
    ok = [False] * (n + 1)
    open_ids: set[str] = set()
    for i, m in enumerate(messages):
        results = [b.tool_use_id for b in m.content if isinstance(b, ToolResultBlock)]
        ok[i] = not open_ids and not results
        for rid in results:
            open_ids.discard(rid)
        for b in m.content:
            if isinstance(b, ToolUseBlock):
                open_ids.add(b.id)
    ok[n] = True
    return ok


def open_cycle_start(messages: Sequence[Message]) -> int:
    """Index of the assistant message of the open tool cycle (the last assistant message, when
    only its tool results follow it), else len(messages). Nothing from there on is touched:
    its thinking blocks must go back unmodified and its results are not yet seen by the model."""
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].role == "assistant":
            return i
    return len(messages)


def merge_same_role(messages: Sequence[Message]) -> list[Message]:
    """Consecutive messages of one role become one message (the API wants alternation)."""
    out: list[Message] = []
    for m in messages:
        if out and out[-1].role == m.role:
            out[-1] = Message.model_construct(role=m.role, content=[*out[-1].content, *m.content])
        else:
            out.append(m)
    return out


def as_block(data: dict[str, Any]) -> Block:
    return block_adapter.validate_python(data)


def cleared_references(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Every result a stage replaced by a reference: sha256, tool, tool_use_id, original tokens,
    stage. (What the offline `longrun compact` lists, since it has no artifact store.)"""
    out = []
    for m in messages:
        for b in m.content:
            if isinstance(b, ToolResultBlock) and is_cleared(b):
                out.append({"sha256": extra(b, ARTIFACT_KEY), "tool": extra(b, TOOL_KEY), "tool_use_id": b.tool_use_id,
                            "tokens": extra(b, ORIGINAL_TOKENS_KEY), "stage": extra(b, CLEARED_KEY)})
    return out


def normalize_pairs(messages: Sequence[Message]) -> tuple[list[Message], int]:
    """Move every tool_result to the user message right after its tool_use (creating it when
    needed), as the API requires. Transcripts converted from other clients sometimes deliver a
    parallel call's result one turn late; longrun's own transcripts never need this.
    Returns the messages and how many results were moved."""
    owner: dict[str, int] = {}
    for i, m in enumerate(messages):
        if m.role == "assistant":
            for b in m.content:
                if isinstance(b, ToolUseBlock):
                    owner[b.id] = i
    late: dict[int, list[Any]] = {}
    moved = 0
    out: list[list[Any]] = [list(m.content) for m in messages]
    for i, m in enumerate(messages):
        for b in m.content:
            if isinstance(b, ToolResultBlock) and b.tool_use_id in owner and owner[b.tool_use_id] != i - 1:
                late.setdefault(owner[b.tool_use_id], []).append(b)
                out[i].remove(b)
                moved += 1
    if not moved:
        return list(messages), 0
    result: list[Message] = []
    for i, m in enumerate(messages):
        if out[i]:
            result.append(Message.model_construct(role=m.role, content=out[i]))
        if i in late:
            nxt = i + 1
            if nxt < len(messages) and messages[nxt].role == "user":
                out[nxt] = [*late[i], *out[nxt]]
            else:
                result.append(Message.model_construct(role="user", content=late[i]))
    return merge_same_role(result), moved
