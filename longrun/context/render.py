"""Rendering a projection into a model request, cache-aware.

Layout, most stable first: the system prompt; the summary (a first user message wrapped in
`<summary_of_earlier_work>`); the projection's messages; the transcript entries after the
projection, verbatim; and last, the task-state block as the last text block of the last user
message. Between two compactions a request is the previous request plus new messages, with only
the state block moved to the end, so the provider's prompt cache hits on everything before it.
"""

from __future__ import annotations

from collections.abc import Sequence

from longrun.context.state_block import render_state_block
from longrun.context.summary import CLOSE_TAG, OPEN_TAG
from longrun.context.transcript import clean_message, merge_same_role
from longrun.models.blocks import Message, TextBlock
from longrun.models.context import Projection, TranscriptItem
from longrun.models.provider import ModelRequest, ToolSpec
from longrun.models.state import TaskState

OMITTED_NOTE = "[Earlier conversation omitted to fit the context window; the task state at the end is authoritative.]"


def summary_text(summary: str) -> str:
    return f"{OPEN_TAG}\n{summary}\n{CLOSE_TAG}"


def render_messages(projection: Projection | None, new_items: Sequence[TranscriptItem]) -> list[Message]:
    """Summary message + projection messages + new entries, internal keys stripped, roles merged
    (no state block)."""
    msgs: list[Message] = []
    if projection is not None and projection.summary:
        msgs.append(Message(role="user", content=[TextBlock(text=summary_text(projection.summary))]))
    if projection is not None:
        msgs.extend(projection.messages)
    cover = projection.covers_through_seq if projection is not None else 0
    msgs.extend(it.message for it in sorted(new_items, key=lambda it: it.seq) if it.seq > cover)
    msgs = merge_same_role([clean_message(m) for m in msgs])
    if msgs and msgs[0].role == "assistant":
        msgs.insert(0, Message(role="user", content=[TextBlock(text=OMITTED_NOTE)]))
    return msgs


def with_state_block(messages: list[Message], state: TaskState, notes_tokens: int | None = None) -> list[Message]:
    block = TextBlock(text=render_state_block(state, notes_tokens))
    if messages and messages[-1].role == "user":
        return [*messages[:-1], Message.model_construct(role="user", content=[*messages[-1].content, block])]
    return [*messages, Message(role="user", content=[block])]


def render_request(
    *,
    model: str,
    system: str,
    projection: Projection | None,
    new_items: Sequence[TranscriptItem],
    state: TaskState,
    tools: Sequence[ToolSpec],
    max_tokens: int,
    notes_tokens: int | None = None,
) -> ModelRequest:
    """The request for the next model call.

    Args:
        projection: the current projection, or None before the first compaction.
        new_items: transcript entries; those after `projection.covers_through_seq` are sent
            verbatim (passing the whole transcript is fine).
        state: the head TaskState; its block is always the last text of the last user message.
        notes_tokens: the most tokens its notes take (`state_block.notes_budget(limit)`; the
            oldest go first); None shows them all.

    Returns:
        A ModelRequest with every `longrun_*` key stripped. Call `fit_request` on it before
        sending.
    """
    messages = with_state_block(render_messages(projection, new_items), state, notes_tokens)
    return ModelRequest(model=model, system=system, messages=messages, tools=list(tools), max_tokens=max_tokens)
