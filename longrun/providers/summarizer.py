"""`ModelSummarizer`: stage 2 of the context pipeline done by a model.

It asks the provider for a structured summary of older turns (sections Goal, Progress, Facts,
Decisions, Next step), folding in the previous summary, wrapped in
`<summary_of_earlier_work>...</summary_of_earlier_work>`. It never decides whether the summary is
good: `longrun.context` validates it against the task state and falls back to the deterministic
extractive summary when it is empty, too large or contradicts the state. Constraints and
approvals are not the summarizer's business either: they are rendered from `TaskState` on every
request, so the prompt tells the model to leave them out.

Material larger than the model's window is summarized in chunks, each chunk folding the summary of
the previous ones, so a single call never overflows.
"""

from __future__ import annotations

import json
import re

from longrun.context.tokens import estimate_text
from longrun.models.blocks import (
    ImageBlock,
    Message,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from longrun.models.provider import ModelRequest
from longrun.models.state import TaskState
from longrun.providers.base import Provider

SUMMARY_OPEN = "<summary_of_earlier_work>"
SUMMARY_CLOSE = "</summary_of_earlier_work>"
SECTIONS = ("Goal", "Progress", "Facts", "Decisions", "Next step")

SYSTEM_PROMPT = (
    "You compress the earlier part of a long-running code-review agent's work into a summary that "
    "replaces it in the agent's context. The agent will continue from your summary alone, so keep "
    "every fact it still needs: file paths, line numbers, function names, exact error messages, "
    "commands and their outcomes, artifact sha256 references, what was tried and failed. Drop "
    "chatter and anything superseded.\n"
    "Do not restate constraints, approvals or permissions: they are kept separately, and a summary "
    "can never grant or change them. Never claim an action was approved or done unless a tool "
    "result shows it.\n"
    f"Answer with exactly this structure and nothing else:\n{SUMMARY_OPEN}\n"
    + "\n".join(f"## {s}\n..." for s in SECTIONS)
    + f"\n{SUMMARY_CLOSE}"
)

TOOL_RESULT_CHARS = 4_000
TOOL_INPUT_CHARS = 1_000
PROMPT_MARGIN = 4_000
_WRAPPED_RE = re.compile(re.escape(SUMMARY_OPEN) + r"(.*?)" + re.escape(SUMMARY_CLOSE), re.S)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n[... {len(text) - limit} more characters omitted]"


def render_transcript(messages: list[Message]) -> str:
    """Messages as plain text for the summarizer (long tool output clipped, thinking omitted)."""
    out: list[str] = []
    for m in messages:
        for b in m.content:
            if isinstance(b, TextBlock):
                out.append(f"[{m.role}] {b.text}")
            elif isinstance(b, ToolUseBlock):
                out.append(f"[tool call {b.id}] {b.name} {_clip(json.dumps(b.input, ensure_ascii=False), TOOL_INPUT_CHARS)}")
            elif isinstance(b, ToolResultBlock):
                content = b.content if isinstance(b.content, str) else "\n".join(
                    str(c.get("text", f"[{c.get('type')}]")) for c in b.content if isinstance(c, dict)
                )
                flag = " ERROR" if b.is_error else ""
                out.append(f"[tool result {b.tool_use_id}{flag}] {_clip(content, TOOL_RESULT_CHARS)}")
            elif isinstance(b, ImageBlock):
                out.append(f"[{m.role}] [image]")
            elif isinstance(b, (ThinkingBlock, RedactedThinkingBlock)):
                continue
    return "\n".join(out)


def wrap_summary(text: str) -> str:
    """The model's answer as one `<summary_of_earlier_work>` block (tags added when missing)."""
    m = _WRAPPED_RE.search(text)
    body = (m.group(1) if m else text.replace(SUMMARY_OPEN, "").replace(SUMMARY_CLOSE, "")).strip()
    return f"{SUMMARY_OPEN}\n{body}\n{SUMMARY_CLOSE}"


class ModelSummarizer:
    """Summarizes older turns with a model.

    Args:
        provider: the run's provider (any `Provider`). With the offline `scripted` provider the
            answer is not a summary and validation rejects it; the context pipeline then uses the
            extractive summarizer, which is the intended offline path.
    """

    source = "model"

    def __init__(self, provider: Provider) -> None:
        self.provider = provider

    def summarize(
        self, messages: list[Message], previous_summary: str | None, state: TaskState, max_tokens: int
    ) -> str:
        """A structured summary of `messages`, folding `previous_summary`.

        Args:
            messages: the turns being replaced, oldest first.
            previous_summary: the summary those turns followed, if any.
            state: the run's task state (objective and step, for orientation only).
            max_tokens: the most output tokens the summary may take.

        Returns:
            The summary wrapped in `<summary_of_earlier_work>...</summary_of_earlier_work>`.

        Raises:
            ProviderError: whatever the provider raises (the caller falls back to extractive).
        """
        budget = max(2_000, self.provider.info.window - max_tokens - PROMPT_MARGIN - estimate_text(SYSTEM_PROMPT))
        summary = previous_summary
        for chunk in self._chunks(messages, budget // 2):
            summary = self._summarize_chunk(chunk, summary, state, max_tokens)
        return summary if summary is not None else wrap_summary("")

    def _chunks(self, messages: list[Message], budget: int) -> list[list[Message]]:
        chunks: list[list[Message]] = [[]]
        used = 0
        for m in messages:
            cost = estimate_text(render_transcript([m]))
            if chunks[-1] and used + cost > budget:
                chunks.append([])
                used = 0
            chunks[-1].append(m)
            used += cost
        return chunks

    def _summarize_chunk(
        self, messages: list[Message], previous: str | None, state: TaskState, max_tokens: int
    ) -> str:
        parts = [
            f"Objective of the run: {state.objective}",
            f"Current step: {state.current_step.value}; next action: {state.next_action.value}",
        ]
        if previous:
            parts.append(f"Summary of the work before the turns below (fold it into yours):\n{previous}")
        parts.append(f"Turns to summarize:\n{render_transcript(messages)}")
        parts.append(
            f"Write the summary now, in at most {max_tokens} tokens, with the sections "
            f"{', '.join(SECTIONS)}, wrapped in {SUMMARY_OPEN}...{SUMMARY_CLOSE}."
        )
        request = ModelRequest(
            model=self.provider.name,
            system=SYSTEM_PROMPT,
            messages=[Message.user_text("\n\n".join(parts))],
            max_tokens=max_tokens,
        )
        response = self.provider.complete(request)
        text = "\n".join(b.text for b in response.content if isinstance(b, TextBlock))
        return wrap_summary(text)
