"""Anthropic's context management, as documented, for the fake Messages API (tests/fake_anthropic.py).

- **Beta headers.** `context_management` needs `anthropic-beta: context-management-2025-06-27`;
  a `compact_20260112` edit, or a `compaction` block in the messages, also `compact-2026-01-12`.
  Without them: 400, as the API answers an unknown field.
- **Edit shapes.** `clear_tool_uses_20250919`: `trigger` `{"type": "input_tokens" | "tool_uses",
  "value": int}`, `keep` `{"type": "tool_uses", "value": int}`, `clear_at_least`
  `{"type": "input_tokens", "value": int}`, `exclude_tools` a list of names, `clear_tool_inputs` a
  bool or a list of names. `compact_20260112`: `trigger` `{"type": "input_tokens", "value": int}`
  at least `min_compaction_trigger` (the API's 50,000), `instructions` a string,
  `pause_after_compaction` a bool. Unknown keys or types: 400.
- **A compaction block in the request.** Every block before the last one is ignored: the
  context starts at its summary (`content`).
- **Clearing.** When the input (after the above) is over the trigger, the results of every tool
  use but the newest `keep` (and those of `exclude_tools`) are replaced by a placeholder, oldest
  first, and with `clear_tool_inputs` their inputs too; only if that clears at least
  `clear_at_least` tokens. The answer's `context_management.applied_edits` says how many tool
  uses and input tokens were cleared. The model sees, and usage and the prompt cache count, the
  cleared request: a cleared block changes the cached prefix from there on.
- **Compaction.** When the (cleared) input is over the compaction trigger, the answer's content
  starts with `{"type": "compaction", "content": <summary>}`; `usage.iterations` reports the
  compaction pass and the message pass; the top-level usage is the message pass: the system
  prompt, tools, the summary and the last message.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

CONTEXT_BETA = "context-management-2025-06-27"
COMPACT_BETA = "compact-2026-01-12"
CLEARED = "[cleared by context management]"
MIN_COMPACTION_TRIGGER = 50_000

_CLEAR_KEYS = {"type", "trigger", "keep", "clear_at_least", "exclude_tools", "clear_tool_inputs"}
_COMPACT_KEYS = {"type", "trigger", "instructions", "pause_after_compaction"}


def betas_of(headers: dict[str, str], body: dict[str, Any] | None = None) -> set[str]:
    """The request's betas: the `anthropic-beta` header, or Bedrock's `anthropic_beta` body field."""
    found = {b.strip() for b in headers.get("anthropic-beta", "").split(",") if b.strip()}
    extra = (body or {}).get("anthropic_beta")
    return found | ({str(b) for b in extra} if isinstance(extra, list) else set())


def _threshold(value: Any, kinds: tuple[str, ...], where: str) -> str | None:
    if not isinstance(value, dict) or value.get("type") not in kinds or set(value) != {"type", "value"}:
        return f"context_management.edits.{where}: expected {{\"type\": {' | '.join(kinds)}, \"value\": int}}, got {value!r}"
    if not isinstance(value["value"], int) or value["value"] < 0:
        return f"context_management.edits.{where}.value: must be a non-negative integer"
    return None


def validate(body: dict[str, Any], betas: set[str], *, min_compaction_trigger: int) -> str | None:
    """The API's 400 message for a malformed or unlicensed context management request, or None."""
    has_block = any(isinstance(b, dict) and b.get("type") == "compaction"
                    for m in body.get("messages") or [] if isinstance(m.get("content"), list) for b in m["content"])
    if has_block and COMPACT_BETA not in betas:
        return f"messages: compaction blocks need the `{COMPACT_BETA}` beta"
    cm = body.get("context_management")
    if cm is None:
        return None
    if CONTEXT_BETA not in betas:
        return f"context_management: Extra inputs are not permitted (beta `{CONTEXT_BETA}` not enabled)"
    if not isinstance(cm, dict) or set(cm) - {"edits"} or not isinstance(cm.get("edits"), list):
        return "context_management: expected {\"edits\": [...]}"
    for i, edit in enumerate(cm["edits"]):
        kind = edit.get("type") if isinstance(edit, dict) else None
        if kind == "clear_tool_uses_20250919":
            if set(edit) - _CLEAR_KEYS:
                return f"context_management.edits.{i}: Extra inputs are not permitted: {sorted(set(edit) - _CLEAR_KEYS)}"
            for key, kinds in (("trigger", ("input_tokens", "tool_uses")), ("keep", ("tool_uses",)),
                               ("clear_at_least", ("input_tokens",))):
                if key in edit and (problem := _threshold(edit[key], kinds, f"{i}.{key}")):
                    return problem
            if "exclude_tools" in edit and not (isinstance(edit["exclude_tools"], list)
                                                and all(isinstance(t, str) for t in edit["exclude_tools"])):
                return f"context_management.edits.{i}.exclude_tools: must be a list of tool names"
            if "clear_tool_inputs" in edit and not isinstance(edit["clear_tool_inputs"], bool | list):
                return f"context_management.edits.{i}.clear_tool_inputs: must be a boolean or a list of tool names"
        elif kind == "compact_20260112":
            if COMPACT_BETA not in betas:
                return f"context_management.edits.{i}: compact_20260112 needs the `{COMPACT_BETA}` beta"
            if set(edit) - _COMPACT_KEYS:
                return f"context_management.edits.{i}: Extra inputs are not permitted: {sorted(set(edit) - _COMPACT_KEYS)}"
            if "trigger" in edit:
                if problem := _threshold(edit["trigger"], ("input_tokens",), f"{i}.trigger"):
                    return problem
                if edit["trigger"]["value"] < min_compaction_trigger:
                    return (f"context_management.edits.{i}.trigger.value: must be at least {min_compaction_trigger} "
                            "input tokens")
            if "instructions" in edit and not isinstance(edit["instructions"], str):
                return f"context_management.edits.{i}.instructions: must be a string"
        else:
            return f"context_management.edits.{i}.type: unknown edit type {kind!r}"
    return None


def _edit(body: dict[str, Any], kind: str) -> dict[str, Any] | None:
    edits = (body.get("context_management") or {}).get("edits") or []
    return next((e for e in edits if e.get("type") == kind), None)


def from_compaction(body: dict[str, Any]) -> dict[str, Any]:
    """The request as the API reads it: everything before the last compaction block dropped."""
    messages = body.get("messages") or []
    for i in range(len(messages) - 1, -1, -1):
        content = messages[i].get("content")
        if not isinstance(content, list):
            continue
        at = [j for j, b in enumerate(content) if isinstance(b, dict) and b.get("type") == "compaction"]
        if at:
            head = {**messages[i], "content": content[at[-1]:]}
            return {**body, "messages": [head, *messages[i + 1:]]}
    return body


def clear_tool_uses(body: dict[str, Any], count: Callable[[dict[str, Any]], int]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The request after `clear_tool_uses_20250919`, and its applied edit (None: not applied)."""
    edit = _edit(body, "clear_tool_uses_20250919")
    if edit is None:
        return body, None
    trigger = (edit.get("trigger") or {"type": "input_tokens", "value": 100_000})
    keep = int((edit.get("keep") or {}).get("value", 3))
    at_least = int((edit.get("clear_at_least") or {}).get("value", 0))
    excluded = set(edit.get("exclude_tools") or [])
    inputs = edit.get("clear_tool_inputs", False)
    before = count(body)
    uses = [(i, j, b) for i, m in enumerate(body.get("messages") or []) if isinstance(m.get("content"), list)
            for j, b in enumerate(m["content"]) if isinstance(b, dict) and b.get("type") == "tool_use"]
    over = before > trigger["value"] if trigger["type"] == "input_tokens" else len(uses) > trigger["value"]
    if not over:
        return body, None
    candidates = [u for u in (uses[:-keep] if keep else uses) if u[2].get("name") not in excluded]
    if not candidates:
        return body, None
    edited = copy.deepcopy(body)
    messages = edited["messages"]
    ids = {b.get("id"): b.get("name") for _, _, b in candidates}
    cleared = 0
    for i, j, b in candidates:
        if inputs is True or (isinstance(inputs, list) and b.get("name") in inputs):
            messages[i]["content"][j]["input"] = {}
    for m in messages:
        for b in m.get("content") if isinstance(m.get("content"), list) else []:
            if (isinstance(b, dict) and b.get("type") == "tool_result" and b.get("tool_use_id") in ids
                    and b.get("content") != CLEARED):
                b["content"] = CLEARED
                cleared += 1
    freed = before - count(edited)
    if cleared == 0 or freed < at_least:
        return body, None
    return edited, {"type": "clear_tool_uses_20250919", "cleared_tool_uses": cleared, "cleared_input_tokens": freed}


def compaction_trigger(body: dict[str, Any]) -> int | None:
    edit = _edit(body, "compact_20260112")
    if edit is None:
        return None
    return int((edit.get("trigger") or {}).get("value", 150_000))


def as_text(body: dict[str, Any]) -> dict[str, Any]:
    """The request with compaction blocks as text blocks (for policies that rebuild a longrun request)."""
    messages = []
    for m in body.get("messages") or []:
        content = m.get("content")
        if isinstance(content, list):
            content = [{"type": "text", "text": str(b.get("content") or "")} if isinstance(b, dict)
                       and b.get("type") == "compaction" else b for b in content]
        messages.append({**m, "content": content})
    return {**body, "messages": messages}


def default_summary(body: dict[str, Any]) -> str:
    messages = body.get("messages") or []
    uses = sum(1 for m in messages if isinstance(m.get("content"), list)
               for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_use")
    return f"Summary of the conversation so far: {len(messages)} messages, {uses} tool uses."
