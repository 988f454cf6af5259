"""Stage 3, hard enforcement: drop the oldest material until a request fits.

Runs on every request before it is sent (and answers a provider's `ContextOverflow` with a lower
limit). Only whole turns go, at cuts that split no tool pair; the summary message and the final
task-state block always stay; a minimum tail of turns is kept while that still fits, and when
even it does not, the limit wins: older tail turns go, then the largest results in what remains
become references.
"""

from __future__ import annotations

from collections.abc import Sequence

from longrun.context.layout import fit_all
from longrun.context.render import OMITTED_NOTE, summary_text
from longrun.context.summary import CLOSE_TAG, OPEN_TAG
from longrun.context.tokens import (
    REQUEST_OVERHEAD,
    Calibration,
    estimate_block,
    estimate_message,
    estimate_text,
    estimate_tools,
)
from longrun.context.transcript import cut_points, merge_same_role, reference_text, result_text, tool_uses_by_id
from longrun.errors import ContextOverflow
from longrun.models.blocks import Message, TextBlock, ToolResultBlock
from longrun.models.canonical import sha256_hex
from longrun.models.provider import ModelRequest


def tail_floor(messages: Sequence[Message], turns: int) -> int:
    """Index where the newest `turns` turns (an assistant message and what follows it) begin."""
    seen = 0
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].role == "assistant":
            seen += 1
            if seen >= turns:
                return i
    return 0


def choose_cut(messages: Sequence[Message], ests: Sequence[int], room: int, last_cut: int) -> int | None:
    """Smallest safe cut c <= `last_cut` (drop messages[:c]) with sum(ests[c:]) <= room, or
    None when no such cut fits."""
    ok = cut_points(messages)
    suffix = [0] * (len(messages) + 1)
    for i in range(len(messages) - 1, -1, -1):
        suffix[i] = suffix[i + 1] + ests[i]
    if suffix[0] <= room:
        return 0
    for c in range(1, last_cut + 1):
        if ok[c] and suffix[c] <= room:
            return c
    return None


def fit_request(request: ModelRequest, *, limit: int, calibration: Calibration, keep_min_tail_turns: int) -> tuple[ModelRequest, int]:
    """The request, shrunk to at most `limit` calibrated tokens, and the tokens freed.

    Raises:
        ContextOverflow: when system prompt, tools, summary and task state alone exceed `limit`.
    """
    messages = list(request.messages)
    ests = [estimate_message(m) for m in messages]
    fixed = estimate_text(request.system) + estimate_tools(request.tools) + REQUEST_OVERHEAD
    total = fixed + sum(ests)
    if calibration.apply(total) <= limit:
        return request, 0
    allowed = int(limit / calibration.ratio)

    head: list[TextBlock] = []
    first = messages[0] if messages else None
    if first is not None and first.role == "user" and isinstance(first.content[0], TextBlock) and first.content[0].text.startswith(OPEN_TAG):
        head = [first.content[0]]
        rest = [b for b in first.content[1:] if not (isinstance(b, TextBlock) and b.text == OMITTED_NOTE)]
        messages = ([Message.model_construct(role="user", content=rest)] if rest else []) + messages[1:]
        ests = [estimate_message(messages[0]), *ests[1:]] if rest else ests[1:]
    note = TextBlock(text=OMITTED_NOTE)
    head_cost = estimate_message(Message.model_construct(role="user", content=[*head, note]))
    room = allowed - fixed - head_cost
    last_cut = max(0, len(messages) - 1)
    keep_from = tail_floor(messages, keep_min_tail_turns)
    c = choose_cut(messages, ests, room, min(keep_from, last_cut))
    if c is None:
        c = choose_cut(messages, ests, room, last_cut)
    if c is None:
        ok = cut_points(messages)
        c = max(i for i in range(last_cut + 1) if ok[i])
    kept = messages[c:]
    kept_ests = list(ests[c:])
    if sum(kept_ests) > room:
        kept, kept_ests = _shrink(kept, kept_ests, room)
    if sum(kept_ests) > room and head:
        # the very last resort: the summary's oldest index lines and least informative facts,
        # counted, then its quoted messages and its body (`layout.fit_all`)
        inner = head[0].text[len(OPEN_TAG) + 1: -(len(CLOSE_TAG) + 1)]
        fitted = fit_all(inner, sum(kept_ests) - room)[0]
        if fitted != inner:
            head = [TextBlock(text=summary_text(fitted))] if fitted else []
            head_cost = estimate_message(Message.model_construct(role="user", content=[*head, note]))
            room = allowed - fixed - head_cost
    if sum(kept_ests) > room:
        raise ContextOverflow(
            f"the request cannot fit {limit} tokens: even the newest turn, the summary and the task state "
            f"take about {calibration.apply(fixed + head_cost + sum(kept_ests))}; raise the window or shorten the system prompt"
        )
    out: list[Message] = []
    if head or c > 0:
        out.append(Message(role="user", content=[*head, note] if c > 0 else head))
    out.extend(kept)
    out = merge_same_role(out)
    new_req = request.model_copy(update={"messages": out})
    new_total = fixed + sum(estimate_message(m) for m in out)
    return new_req, max(0, calibration.apply(total) - calibration.apply(new_total))


def _shrink(messages: list[Message], ests: list[int], room: int) -> tuple[list[Message], list[int]]:
    """Last resort: the largest tool results still in the request become references (their
    artifacts keep the full output), largest first, until the messages fit `room`."""
    uses = tool_uses_by_id(messages)
    candidates = sorted(
        ((estimate_block(b), i, j) for i, m in enumerate(messages) for j, b in enumerate(m.content) if isinstance(b, ToolResultBlock)),
        reverse=True,
    )
    messages, ests = list(messages), list(ests)
    for tokens, i, j in candidates:
        if sum(ests) <= room or tokens < 200:
            break
        b = messages[i].content[j]
        assert isinstance(b, ToolResultBlock)
        use = uses.get(b.tool_use_id)
        sha = sha256_hex(result_text(b))
        text = reference_text(use.name if use else "tool", use.input if use else {}, sha, tokens, "result trimmed to fit the window")
        nb = ToolResultBlock(tool_use_id=b.tool_use_id, content=text, is_error=b.is_error)
        content = list(messages[i].content)
        content[j] = nb
        messages[i] = Message.model_construct(role=messages[i].role, content=content)
        ests[i] = estimate_message(messages[i])
    return messages, ests
