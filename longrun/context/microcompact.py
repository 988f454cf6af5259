"""Stage 1, microcompact: old tool results become references (tool, input, artifact).

Oldest first, never the newest `keep` tool uses, never `exclude_tools`, never the open tool
cycle; it stops once the projection is under the target *and* at least `clear_at_least` tokens
were freed, and clears nothing at all when even every eligible result would free less than
that (the prompt-cache rewrite would cost more than it saves). Clearing oldest first keeps the
prefix cleared by earlier compactions byte-identical.
"""

from __future__ import annotations

from typing import Any

from longrun.context.ledger import facts_to_keep
from longrun.context.tokens import BLOCK_OVERHEAD, TOOL_BLOCK_OVERHEAD, estimate_block, estimate_message, estimate_text
from longrun.context.transcript import (
    artifact_sha,
    is_cleared,
    open_cycle_start,
    reference_text,
    replace_result,
    result_text,
    tool_uses_by_id,
)
from longrun.context.trim import StageResult
from longrun.models.blocks import Message, ToolResultBlock, ToolUseBlock
from longrun.models.spec import ContextPolicy

MIN_SAVING = 40
"""A result whose reference would save fewer tokens than this is left as it is."""
LONG_INPUT_CHARS = 256


def microcompact(messages: list[Message], ests: list[int], *, policy: ContextPolicy, excess: int | None) -> StageResult:
    """Clear old results until `excess` tokens are freed (None: every eligible result).

    `ests` are the per-message estimates of `messages`; they are updated in place for the
    messages this stage changes, so no caller re-estimates the whole transcript."""
    uses = tool_uses_by_id(messages)
    order = [b.id for m in messages for b in m.content if isinstance(b, ToolUseBlock)]
    protected = set(order[-policy.keep:]) if policy.keep else set()
    excluded = set(policy.exclude_tools)
    stop = open_cycle_start(messages)

    plan: list[tuple[int, int, ToolResultBlock, str, str, int, str]] = []  # (msg, block, result, tool, sha, tokens, reference)
    freed = 0
    want = max(policy.clear_at_least, excess) if excess is not None else None
    for i in range(stop):
        if want is not None and freed >= want:
            break
        msg = messages[i]
        for j, b in enumerate(msg.content):
            if not isinstance(b, ToolResultBlock) or is_cleared(b) or b.tool_use_id in protected:
                continue
            use = uses.get(b.tool_use_id)
            tool = use.name if use else "unknown_tool"
            if tool in excluded:
                continue
            before = estimate_block(b)
            text = result_text(b)
            sha = artifact_sha(b)
            ref = reference_text(tool, use.input if use else {}, sha, before, "result cleared")
            # what `estimate_block` gives the cleared block (its internal keys are never counted)
            saving = before - (BLOCK_OVERHEAD + TOOL_BLOCK_OVERHEAD + estimate_text(ref))
            if saving < MIN_SAVING or not text:
                continue
            plan.append((i, j, b, tool, sha, before, ref))
            freed += saving
    if freed < policy.clear_at_least or not plan:
        return StageResult(list(messages))

    out = list(messages)
    res = StageResult(out, freed=0)
    by_msg: dict[int, dict[int, ToolResultBlock]] = {}
    for i, j, b, tool, sha, tokens, ref in plan:
        # built (and its fact lines read) only for the results this stage does clear: reading every
        # candidate's facts first made a call that then cleared nothing cost a cold analysis
        by_msg.setdefault(i, {})[j] = replace_result(b, ref, tool=tool, sha=sha, tokens=tokens, stage="microcompact",
                                                     keep_facts=facts_to_keep(b))
    cleared_ids: set[str] = set()
    for i, repl in by_msg.items():
        content = [repl.get(j, b) for j, b in enumerate(out[i].content)]
        out[i] = Message.model_construct(role=out[i].role, content=content)
        res.changed.add(i)
        for nb in repl.values():
            cleared_ids.add(nb.tool_use_id)
            extra = nb.model_extra or {}
            res.cleared.append({"sha256": extra["longrun_artifact"], "tool": extra["longrun_tool"],
                                "tool_use_id": nb.tool_use_id, "tokens": extra["longrun_original_tokens"],
                                "stage": "microcompact"})
    if policy.clear_tool_inputs:
        for i in range(stop):
            m = out[i]
            if m.role != "assistant" or not any(isinstance(b, ToolUseBlock) and b.id in cleared_ids for b in m.content):
                continue
            out[i] = Message.model_construct(role=m.role, content=[
                _clear_input(b) if isinstance(b, ToolUseBlock) and b.id in cleared_ids else b for b in m.content])
            res.changed.add(i)
    for i in res.changed:
        new = estimate_message(out[i])
        res.freed += ests[i] - new
        ests[i] = new
    return res


def _clear_input(b: ToolUseBlock) -> ToolUseBlock:
    """Long string values of a cleared tool use's input (file contents, patches) become a note;
    short ones (paths, commands, patterns) stay, so the call remains legible."""
    def shrink(v: Any) -> Any:
        if isinstance(v, str) and len(v) > LONG_INPUT_CHARS:
            return f"[cleared: {len(v)} chars]"
        if isinstance(v, dict):
            return {k: shrink(x) for k, x in v.items()}
        if isinstance(v, list):
            return [shrink(x) for x in v]
        return v

    data = b.model_dump(mode="json", exclude_none=True)
    data["input"] = shrink(b.input)
    return ToolUseBlock.model_validate(data)
