"""The model call's side of provider-side context management (`context.mode` provider / hybrid).

Kept out of the workflow: the request gets the policy's parameters (`ProviderContext`), the
answer's report goes onto the assistant message (`longrun_provider_context`, never sent) and into
a `provider_context` audit event, calibration learns only from what the provider really read, and
an opaque compaction (OpenAI's item) gets longrun's own structured summary as its text beside it.

What this never does: take task state from the provider. The state block is rendered from
`TaskState` into every request after any compaction block, the gate decides each effect from
`TaskState` and the audit, and a summary (the provider's or longrun's) is only conversation.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from longrun.context import Calibration, compact
from longrun.context.summary import ExtractiveSummarizer
from longrun.context.tokens import estimate_text
from longrun.models.blocks import Block, TextBlock
from longrun.models.context import Projection, TranscriptItem
from longrun.models.provider import ModelRequest, ModelResponse, ProviderContextReport, ToolSpec
from longrun.models.spec import ContextPolicy
from longrun.models.state import TaskState
from longrun.providers.provider_context import ITEM_KEY, carries_compaction, manages_context

REPORT_KEY = "longrun_provider_context"
"""On the first block of an assistant message: what the provider reported for that call."""
GOAL_HEADING = "## Goal"
BODY_BESIDE_ITEM = 300
"""Tokens of the extractive body put back beside a provider's compaction item when longrun's own
compaction left it out for the facts."""
SUMMARY_HEAD = ("[The provider compacted the conversation before this point into an opaque item, sent back to it "
                "verbatim. longrun's own summary of what it replaced, for people and for any later request "
                "without the item:]\n")


def effective_policy(policy: ContextPolicy, model: str) -> ContextPolicy:
    """The policy as it applies to `model`: provider / hybrid mode is `client` on a model whose
    API manages no context (`openai-compatible:`, `scripted`), so longrun's triggers stay on."""
    return policy if policy.mode == "client" or manages_context(model) else policy.model_copy(update={"mode": "client"})


def with_provider_context(request: ModelRequest, policy: ContextPolicy, model: str, window: int) -> ModelRequest:
    """The request with the policy's provider-side parameters, in provider / hybrid mode."""
    ctx = effective_policy(policy, model).provider_context(window)
    return request if ctx is None else request.model_copy(update={"context": ctx})


def calibration_after(calibration: Calibration, estimated: int, request: ModelRequest,
                      response: ModelResponse) -> Calibration | None:
    """The calibration after this call, or None to keep it as it was.

    A provider that cleared tool results read fewer tokens than longrun sent: what it cleared is
    added back, so the ratio still compares like with like. One that compacted, or a request that
    carries an earlier compaction (the provider ignores what precedes it), says nothing about
    longrun's estimator: no update."""
    report = response.context
    if (report is not None and report.compacted) or carries_compaction(request.messages):
        return None
    actual = response.usage.total_input + (report.cleared_input_tokens if report is not None else 0)
    return calibration.update(estimated, actual)


def longrun_summary(items: Sequence[TranscriptItem], *, previous: Projection | None, state: TaskState,
                    policy: ContextPolicy, window: int, calibration: Calibration, system: str,
                    tools: Sequence[ToolSpec]) -> str:
    """longrun's structured summary (body, results index, the human's words, fact ledger) of the
    conversation so far, by the deterministic extractive pipeline: no model call, nothing saved
    (the projection is not applied; the provider holds the compacted state)."""
    everything = policy.model_copy(update={"tail_tokens": 0, "min_tail_turns": 1, "clear_at_least": 0})
    projection = compact(items, previous=previous, state=state, policy=everything, window=window,
                         trigger="operator", calibration=calibration, summarizer=ExtractiveSummarizer(),
                         system=system, tools=tools, force=True)
    messages = [it.message for it in items]
    if projection.summary and GOAL_HEADING in projection.summary:
        return projection.summary
    # The compaction gave its room to the facts and wrote no body (in a request the state block
    # carries the goal); this summary is read beside the opaque item, without the state block, so
    # it gets the body's goal, progress and next step back, within a small budget.
    body = ExtractiveSummarizer(facts=False).summarize(messages, previous.summary if previous else None, state,
                                                       min(BODY_BESIDE_ITEM, policy.max_summary_tokens))
    return body + "\n\n" + projection.summary if projection.summary else body


def record(content: list[Block], report: ProviderContextReport, summary: str | None) -> tuple[list[Block], int | None]:
    """The assistant message's blocks with the report on the first one and, beside each opaque
    compaction item, longrun's summary as its text; and the summary's size in tokens."""
    out: list[Block] = []
    tokens = None
    for block in content:
        extra: dict[str, Any] = block.model_extra or {}
        item = extra.get(ITEM_KEY)
        if summary and isinstance(block, TextBlock) and isinstance(item, dict) and item.get("type") == "compaction":
            block = TextBlock.model_validate({**block.model_dump(), "text": SUMMARY_HEAD + summary})
            tokens = estimate_text(summary)
        out.append(block)
    if out:
        first = out[0]
        out[0] = type(first).model_validate({**first.model_dump(), REPORT_KEY: report.model_dump(mode="json")})
    return out, tokens
