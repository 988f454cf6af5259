"""The Anthropic adapter: longrun's request/response contract over the real `anthropic` SDK.

One attempt per call (`max_retries=0`): Temporal owns retries, and a second retry layer in the
SDK would multiply attempts and hide `retry-after` from the activity. Errors become
`RetryableProviderError` (408/409/429/5xx/529 and connection failures, with the server's
`retry-after`), `ContextOverflow` (400 "prompt is too long", 413 request_too_large, or a
`model_context_window_exceeded` stop) or `FatalProviderError` (other 4xx, with the API's own
message).

Before anything is sent, the request is checked and cleaned (`to_api_payload`): consecutive
same-role messages are merged, keys starting with `longrun_` (longrun's bookkeeping on transcript
blocks) are dropped, and every `tool_use` must have its `tool_result` in the next user message and
vice versa; an orphan raises `FatalProviderError` naming the id instead of costing a 400 from the
API. Thinking blocks and their signatures are sent back exactly as received.

In `provider` / `hybrid` context mode (`request.context`) the call goes through the SDK's beta
client with `context_management` edits and their beta headers (longrun/providers/
provider_context.py); what the answer reports as cleared or compacted becomes
`ModelResponse.context`, and a `compaction` block is kept verbatim and sent back in its place.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import anthropic

from longrun.errors import ConfigError, ContextOverflow, FatalProviderError, ProviderError, RetryableProviderError
from longrun.models.blocks import Block, Message, block_adapter
from longrun.models.provider import ModelInfo, ModelRequest, ModelResponse, Usage
from longrun.providers.models_table import ANTHROPIC_PREFIX, model_info
from longrun.providers.provider_context import (
    FAILED_COMPACTION_TEXT,
    PROVIDER_BLOCK_KEY,
    anthropic_edits,
    anthropic_report,
)
from longrun.providers.retry_after import retry_after_seconds

log = logging.getLogger(__name__)

INTERNAL_KEY_PREFIX = "longrun_"
RETRYABLE_STATUS = frozenset({408, 409, 429, 529})
DEFAULT_TIMEOUT = 600.0
_CACHE_CONTROL = {"type": "ephemeral"}


class AnthropicProvider:
    """A Claude model through the Messages API.

    Args:
        model_id: the API's model id (without the `anthropic:` prefix).
        api_key: the API key (settings: `ANTHROPIC_API_KEY`).
        base_url: the API's base URL (settings: `ANTHROPIC_BASE_URL`); the SDK's default when None.
        timeout: seconds per HTTP request. Set explicitly so the SDK never guesses from max_tokens.
        prompt_caching: mark the stable prefix (system prompt, and the conversation up to the
            state block) with `cache_control` breakpoints.
    """

    def __init__(
        self,
        model_id: str,
        *,
        api_key: str,
        base_url: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        prompt_caching: bool = True,
    ) -> None:
        if not api_key:
            raise ConfigError("the anthropic provider needs an API key: set ANTHROPIC_API_KEY (or use model 'scripted')")
        self.model_id = model_id
        self.name = f"{ANTHROPIC_PREFIX}{model_id}"
        self.info: ModelInfo = model_info(self.name)
        self.prompt_caching = prompt_caching
        self.client = anthropic.Anthropic(api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout)

    @property
    def base_url(self) -> str:
        return str(self.client.base_url)

    def close(self) -> None:
        self.client.close()

    def complete(self, request: ModelRequest) -> ModelResponse:
        """Send `request` once and parse the answer into longrun blocks.

        The model is always this provider's `model_id`; `max_tokens` is capped at the model's
        maximum output.

        Raises:
            ContextOverflow: HTTP 400 "prompt is too long" or a `model_context_window_exceeded` stop.
            RetryableProviderError: 408/409/429/5xx/529, timeouts and connection errors.
            FatalProviderError: an orphaned tool id (before sending), or any other 4xx.
        """
        payload = self.payload(request)
        try:
            if "betas" in payload:
                message: Any = self.client.beta.messages.create(**payload)
            else:
                message = self.client.messages.create(**payload)
        except anthropic.APIError as exc:
            raise map_api_error(exc) from exc
        data = message.to_dict(mode="json", exclude_none=True)
        usage = usage_from_api(data.get("usage") or {})
        if data.get("stop_reason") == "model_context_window_exceeded":
            raise ContextOverflow(
                f"{self.name} stopped with model_context_window_exceeded after {usage.total_input} input tokens "
                f"(window {self.info.window}); shrink the request and retry"
            )
        return ModelResponse(
            content=[parse_block(b) for b in data.get("content", [])],
            stop_reason=data.get("stop_reason"),
            usage=usage,
            model=str(data.get("model") or self.model_id),
            context=anthropic_report(data) if request.context is not None else None,
        )

    def count_tokens(self, request: ModelRequest) -> int:
        """Input tokens of `request` per the API's count_tokens endpoint (same cleaning and
        checks as `complete`)."""
        payload = self.payload(request.model_copy(update={"context": None}))
        payload.pop("max_tokens", None)
        try:
            result = self.client.messages.count_tokens(**payload)
        except anthropic.APIError as exc:
            raise map_api_error(exc) from exc
        return int(result.input_tokens)

    def payload(self, request: ModelRequest) -> dict[str, Any]:
        """The keyword arguments for `messages.create`: what goes on the wire."""
        messages = to_api_messages(request.messages)
        system: str | list[dict[str, Any]] = request.system
        if self.prompt_caching:
            add_cache_breakpoints(messages)
            if request.system:
                system = [{"type": "text", "text": request.system, "cache_control": dict(_CACHE_CONTROL)}]
        payload: dict[str, Any] = {
            "model": self.model_id,
            "max_tokens": min(request.max_tokens, self.info.max_output),
            "messages": messages,
        }
        if request.system:
            payload["system"] = system
        if request.tools:
            payload["tools"] = [t.model_dump(mode="json") for t in request.tools]
        if request.context is not None:
            payload["context_management"], payload["betas"] = anthropic_edits(request.context)
        return payload


# ---------------------------------------------------------------------------------------------
# Request cleaning and checks
# ---------------------------------------------------------------------------------------------


def _strip_internal(value: Any) -> Any:
    """Drop `longrun_*` keys from a block and from blocks nested in a tool result."""
    if isinstance(value, dict):
        return {k: _strip_internal(v) for k, v in value.items() if not k.startswith(INTERNAL_KEY_PREFIX)}
    if isinstance(value, list):
        return [_strip_internal(v) for v in value]
    return value


def _wire_block(block: Any) -> dict[str, Any]:
    data = block.model_dump(mode="json", exclude_none=True) if hasattr(block, "model_dump") else dict(block)
    verbatim = data.get(PROVIDER_BLOCK_KEY)
    if isinstance(verbatim, dict):
        return dict(verbatim)  # a provider's own block (a compaction), exactly as it came
    stripped = _strip_internal(data)
    assert isinstance(stripped, dict)
    if stripped.get("type") == "tool_result" and not stripped.get("is_error"):
        stripped.pop("is_error", None)
    return stripped


def to_api_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """Messages as the API accepts them: internal keys dropped, consecutive same-role messages
    merged, tool results first within a user message, and tool pairing checked.

    Raises:
        FatalProviderError: a tool_use without its tool_result in the next user message, or a
            tool_result without its tool_use in the previous assistant message.
    """
    merged: list[dict[str, Any]] = []
    for m in messages:
        blocks = [_wire_block(b) for b in m.content]
        if merged and merged[-1]["role"] == m.role:
            merged[-1]["content"].extend(blocks)
        else:
            merged.append({"role": m.role, "content": blocks})
    for wire in merged:
        if wire["role"] == "user":
            # The API wants tool results before any other content of the message.
            wire["content"].sort(key=lambda b: 0 if b.get("type") == "tool_result" else 1)
    check_tool_pairing(merged)
    return merged


def check_tool_pairing(messages: list[dict[str, Any]]) -> None:
    """Raise `FatalProviderError` naming the first orphaned tool id."""
    for i, m in enumerate(messages):
        blocks = m["content"]
        if m["role"] == "assistant":
            nxt = messages[i + 1] if i + 1 < len(messages) else None
            answered = (
                {b.get("tool_use_id") for b in nxt["content"] if b.get("type") == "tool_result"}
                if nxt is not None and nxt["role"] == "user"
                else set()
            )
            for b in blocks:
                if b.get("type") == "tool_use" and b.get("id") not in answered:
                    raise FatalProviderError(
                        f"orphaned tool_use {b.get('id')} ({b.get('name')}) in message {i}: the next user message "
                        "has no tool_result for it; the API would reject the request. Fix the projection so tool "
                        "use / tool result pairs stay together"
                    )
        else:
            prev = messages[i - 1] if i > 0 else None
            used = (
                {b.get("id") for b in prev["content"] if b.get("type") == "tool_use"}
                if prev is not None and prev["role"] == "assistant"
                else set()
            )
            for b in blocks:
                if b.get("type") == "tool_result" and b.get("tool_use_id") not in used:
                    raise FatalProviderError(
                        f"orphaned tool_result for {b.get('tool_use_id')} in message {i}: the previous assistant "
                        "message has no tool_use with that id; the API would reject the request. Fix the projection "
                        "so tool use / tool result pairs stay together"
                    )


def add_cache_breakpoints(messages: list[dict[str, Any]]) -> None:
    """Mark the end of the stable part of the conversation for prompt caching.

    The state block (the last text block of the last user message) changes every turn; everything
    before it is the same in the next request. So the breakpoint goes on the block just before the
    state block, or on the last block of the previous message. Thinking blocks are never marked
    (they must go back unmodified, and the API refuses cache_control on them).
    """
    if not messages:
        return
    last = messages[-1]["content"]
    candidates = [b for b in last[:-1]] if last else []
    if not candidates and len(messages) > 1:
        candidates = list(messages[-2]["content"])
    for b in reversed(candidates):
        if b.get("type") in ("tool_use", "tool_result", "image") or (b.get("type") == "text" and b.get("text")):
            b["cache_control"] = dict(_CACHE_CONTROL)
            return


# ---------------------------------------------------------------------------------------------
# Response parsing and error mapping
# ---------------------------------------------------------------------------------------------


def parse_block(data: dict[str, Any]) -> Block:
    """An API content block as a longrun block; unknown fields (signatures, citations) are kept."""
    kind = data.get("type")
    if kind == "compaction":
        # kept whole for the round trip; its summary is the text longrun reads and estimates
        return block_adapter.validate_python({"type": "text", "text": str(data.get("content") or FAILED_COMPACTION_TEXT),
                                              PROVIDER_BLOCK_KEY: data})
    if kind not in ("text", "thinking", "redacted_thinking", "tool_use", "tool_result", "image"):
        # Server tool blocks and future types: keep the content legible rather than fail the run.
        log.warning("unsupported content block type %r from the API, kept as text", kind)
        return block_adapter.validate_python({"type": "text", "text": json.dumps(data), "longrun_original_type": kind})
    return block_adapter.validate_python(data)


def usage_from_api(data: dict[str, Any]) -> Usage:
    return Usage(
        input_tokens=int(data.get("input_tokens") or 0),
        cache_creation_input_tokens=int(data.get("cache_creation_input_tokens") or 0),
        cache_read_input_tokens=int(data.get("cache_read_input_tokens") or 0),
        output_tokens=int(data.get("output_tokens") or 0),
    )


def map_api_error(exc: anthropic.APIError) -> ProviderError:
    """The longrun error for an SDK error (see the module docstring)."""
    if isinstance(exc, anthropic.APIStatusError):
        status = exc.status_code
        message = exc.api_message or str(exc)
        kind = exc.type or "error"
        if (status == 400 and "prompt is too long" in message.lower()) or status == 413:
            # 413 request_too_large (bytes, not tokens) is cured the same way: a smaller request.
            return ContextOverflow(f"the API refused the request as too long ({status}): {message}")
        if status in RETRYABLE_STATUS or status >= 500:
            return RetryableProviderError(
                f"Anthropic API {status} {kind}: {message}", status=status, retry_after=retry_after_seconds(exc.response.headers)
            )
        return FatalProviderError(f"Anthropic API {status} {kind}: {message}", status=status)
    if isinstance(exc, anthropic.APIConnectionError):  # includes timeouts
        return RetryableProviderError(f"could not reach the Anthropic API: {exc}", status=None)
    return FatalProviderError(f"Anthropic SDK error: {exc}")
