"""Provider-side context management (`context.mode` provider / hybrid): what goes on the wire,
and what the provider's answer says it cleared or compacted.

Anthropic (`context_management`, beta `context-management-2025-06-27`):
`clear_tool_uses_20250919` with the policy's trigger, keep, clear_at_least, exclude_tools and
clear_tool_inputs, and, when the policy asks for it, server compaction `compact_20260112` (beta
`compact-2026-01-12`) with its trigger and instructions. The answer's
`context_management.applied_edits` says how many tool uses and input tokens were cleared; a
`compaction` block at the head of the content is the summary the API continues from (it ignores
every block before it in later requests). That block is kept verbatim on a transcript text block
(`PROVIDER_BLOCK_KEY`, the summary as its text) and sent back exactly as it came.

OpenAI Responses (`context_management: [{"type": "compaction", "compact_threshold": N}]`): the
answer's `compaction` item is opaque (`encrypted_content`); the Responses adapter keeps it
verbatim (`openai_item`) and the model activity writes longrun's own structured summary as the
block's text beside it, since nobody can read the item.

Nothing here is a source of task state: the state block is rendered fresh into every request,
and approvals and effects come from `TaskState` and the audit, never from a summary.
"""

from __future__ import annotations

from typing import Any

from longrun.models.provider import ProviderContext, ProviderContextReport

CONTEXT_BETA = "context-management-2025-06-27"
COMPACT_BETA = "compact-2026-01-12"
CLEAR_TOOL_USES = "clear_tool_uses_20250919"
COMPACT = "compact_20260112"
PROVIDER_BLOCK_KEY = "anthropic_block"
ITEM_KEY = "openai_item"
"""On a transcript block: the Responses output item it came from, verbatim (a reasoning item with
its `encrypted_content`), sent back exactly as received. Defined here, not in the adapter, so that
reading it does not import the OpenAI SDK."""
"""On a transcript text block: Anthropic's own content block (a `compaction`), sent back
verbatim in its place by the Anthropic adapter. Not a `longrun_` key: those are stripped when a
request is rendered, and this one must reach the adapter (as `openai_item` does)."""
FAILED_COMPACTION_TEXT = "(the provider's compaction produced no summary)"


MANAGED_KINDS = ("anthropic:", "bedrock:", "vertex:", "openai:")
"""The model kinds whose API manages context itself; on the others (`openai-compatible:`,
`scripted`) the provider and hybrid modes behave as `client`."""


def manages_context(model: str) -> bool:
    """Whether `model`'s API has provider-side context management longrun can drive."""
    return model.startswith(MANAGED_KINDS)


def anthropic_edits(ctx: ProviderContext) -> tuple[dict[str, Any], list[str]]:
    """The `context_management` parameter and the beta flags it needs."""
    clear: dict[str, Any] = {
        "type": CLEAR_TOOL_USES,
        "trigger": {"type": "input_tokens", "value": ctx.trigger},
        "keep": {"type": "tool_uses", "value": ctx.keep},
        "clear_at_least": {"type": "input_tokens", "value": ctx.clear_at_least},
        "clear_tool_inputs": ctx.clear_tool_inputs,
    }
    if ctx.exclude_tools:
        clear["exclude_tools"] = list(ctx.exclude_tools)
    edits: list[dict[str, Any]] = [clear]
    betas = [CONTEXT_BETA]
    if ctx.compaction:
        compact: dict[str, Any] = {"type": COMPACT,
                                   "trigger": {"type": "input_tokens", "value": ctx.compaction_trigger or ctx.trigger}}
        if ctx.instructions:
            compact["instructions"] = ctx.instructions
        edits.append(compact)
        betas.append(COMPACT_BETA)
    return {"edits": edits}, betas


def anthropic_report(data: dict[str, Any]) -> ProviderContextReport | None:
    """What an Anthropic answer (JSON) says was cleared or compacted; None when nothing was."""
    applied = list(((data.get("context_management") or {}).get("applied_edits")) or [])
    compacted = any(isinstance(b, dict) and b.get("type") == "compaction" for b in data.get("content") or [])
    if not applied and not compacted:
        return None
    iterations = (data.get("usage") or {}).get("iterations") or []
    compaction_input = [int(i.get("input_tokens") or 0) + int(i.get("cache_read_input_tokens") or 0)
                        + int(i.get("cache_creation_input_tokens") or 0)
                        for i in iterations if isinstance(i, dict) and i.get("type") == "compaction"]
    clears = [e for e in applied if isinstance(e, dict) and e.get("type") == CLEAR_TOOL_USES]
    return ProviderContextReport(
        cleared_tool_uses=sum(int(e.get("cleared_tool_uses") or 0) for e in clears),
        cleared_input_tokens=sum(int(e.get("cleared_input_tokens") or 0) for e in clears),
        compacted=compacted,
        compaction_input_tokens=sum(compaction_input) if compaction_input else None,
        applied_edits=applied,
    )


def openai_context(ctx: ProviderContext) -> list[dict[str, Any]]:
    """The Responses `context_management` parameter."""
    return [{"type": "compaction", "compact_threshold": ctx.trigger}]


def openai_report(data: dict[str, Any]) -> ProviderContextReport | None:
    """A Responses answer's compaction item, if any, as a report."""
    items = [i for i in data.get("output") or [] if isinstance(i, dict) and i.get("type") == "compaction"]
    if not items:
        return None
    return ProviderContextReport(compacted=True, compaction_readable=False,
                                 applied_edits=[{"type": "compaction", "id": i.get("id")} for i in items])


def carries_compaction(messages: list[Any]) -> bool:
    """Whether a request holds a provider's compaction (block or item): the provider then reads
    less than longrun sent, so its usage says nothing about longrun's estimator."""
    for m in messages:
        for b in m.content:
            extra = b.model_extra or {}
            block = extra.get(PROVIDER_BLOCK_KEY) or extra.get("openai_item")
            if isinstance(block, dict) and block.get("type") == "compaction":
                return True
    return False
