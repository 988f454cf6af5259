"""`openai-compatible:<model>`: any server that speaks OpenAI's Chat Completions, through the
official `openai` SDK: vLLM, Ollama, llama.cpp's server, a LiteLLM proxy, OpenRouter.

One attempt per call (`max_retries=0`): Temporal owns retries and honours `retry-after`. The
request is longrun's Anthropic-shaped one, cleaned and pair-checked by the Anthropic adapter's
`to_api_messages` (an orphaned tool id fails before anything is sent), then reshaped:

- the system prompt is the first message (`role: system`);
- an assistant message's text is its `content`, its tool uses its `tool_calls`
  (`{"id", "type": "function", "function": {"name", "arguments": "<json>"}}`), ids kept;
  thinking blocks are not sent back (these servers neither want nor verify them);
- a user message's tool results become `role: tool` messages (`tool_call_id`), right after the
  assistant message that asked, and its other blocks a user message after them, so the state
  block stays the last thing in the request: everything before it is the same prefix as in the
  previous request, which is what these servers' automatic prefix caching reuses.

The answer's `tool_calls` become tool uses; arguments that are not a JSON object become an input
the registry refuses with a clear error tool result (`openai_common.parse_arguments`), so the run
goes on. `prompt_tokens_details.cached_tokens` (vLLM, OpenRouter, LiteLLM report it) is the cache
read. There is no count endpoint on these servers: `count_tokens` is longrun's own estimate.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any
from urllib.parse import urlsplit

import openai

from longrun.context.tokens import estimate_request
from longrun.errors import ContextOverflow, FatalProviderError
from longrun.models.blocks import Block, ThinkingBlock, block_adapter
from longrun.models.provider import ModelInfo, ModelRequest, ModelResponse, StopReason, Usage
from longrun.providers.anthropic_provider import to_api_messages
from longrun.providers.models_table import COMPATIBLE_PREFIX
from longrun.providers.openai_common import (
    DEFAULT_TIMEOUT,
    NO_KEY,
    dump_arguments,
    function_tools_chat,
    map_openai_error,
    parse_arguments,
    result_text,
)

log = logging.getLogger(__name__)

_FINISH: dict[str, StopReason] = {
    "stop": "end_turn", "tool_calls": "tool_use", "function_call": "tool_use", "length": "max_tokens",
    "content_filter": "refusal",
}


class OpenAICompatibleProvider:
    """A model behind a Chat Completions server.

    Args:
        model_id: the server's model name (without the `openai-compatible:` prefix).
        base_url: the server's OpenAI base URL, usually ending in `/v1`.
        info: the window and output limit (from the spec's `context_window`, or the default).
        api_key: the server's key (the worker's LONGRUN_OPENAI_API_KEY), or None for a server that
            needs none. Never the worker's OPENAI_API_KEY: that key is OpenAI's, not a third party's.
        timeout: seconds per HTTP request (local models can be slow to start).
    """

    def __init__(
        self, model_id: str, *, base_url: str, info: ModelInfo, api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self.model_id = model_id
        self.name = f"{COMPATIBLE_PREFIX}{model_id}"
        self.info = info
        self.client = openai.OpenAI(api_key=api_key or NO_KEY, base_url=base_url, max_retries=0, timeout=timeout)

    @property
    def base_url(self) -> str:
        return str(self.client.base_url)

    def close(self) -> None:
        self.client.close()

    def complete(self, request: ModelRequest) -> ModelResponse:
        """Send `request` once; the answer as longrun blocks.

        Raises:
            ContextOverflow: the server's context-length refusal, or a `length` stop with no output
                room left because the prompt filled the window.
            RetryableProviderError: 408/409/429/5xx, timeouts and connection errors.
            FatalProviderError: an orphaned tool id (before sending), another 4xx, or an answer
                without choices.
        """
        payload = self.payload(request)
        try:
            completion = self.client.chat.completions.create(**payload)
        except openai.OpenAIError as exc:
            raise map_openai_error(exc, self.name) from exc
        return self.response(completion.to_dict(mode="json", exclude_none=True))

    def count_tokens(self, request: ModelRequest) -> int:
        """longrun's estimate: Chat Completions servers have no count endpoint (calibration
        corrects the estimate from the usage each answer reports)."""
        return estimate_request(request)

    def payload(self, request: ModelRequest) -> dict[str, Any]:
        """The keyword arguments for `chat.completions.create`: what goes on the wire."""
        messages: list[dict[str, Any]] = [{"role": "system", "content": request.system}] if request.system else []
        messages += to_chat_messages(to_api_messages(request.messages))
        payload: dict[str, Any] = {
            "model": self.model_id,
            "messages": messages,
            "max_tokens": min(request.max_tokens, self.info.max_output),
            "stream": False,
        }
        if request.tools:
            payload["tools"] = function_tools_chat(request.tools)
        return payload

    def response(self, data: dict[str, Any]) -> ModelResponse:
        """A completion's JSON as longrun's response."""
        choices = data.get("choices") or []
        if not choices:
            raise FatalProviderError(f"{self.name} answered without choices: {str(data)[:500]}")
        choice = choices[0]
        message = choice.get("message") or {}
        usage = usage_from_chat(data.get("usage") or {})
        content: list[Block] = []
        reasoning = message.get("reasoning_content") or message.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            content.append(ThinkingBlock(thinking=reasoning))
        if message.get("content"):
            content.append(block_adapter.validate_python({"type": "text", "text": str(message["content"])}))
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            content.append(block_adapter.validate_python({
                "type": "tool_use",
                "id": str(call.get("id") or f"call_{uuid.uuid4().hex[:24]}"),  # llama.cpp may omit it
                "name": str(function.get("name") or ""),
                "input": parse_arguments(function.get("arguments")),
            }))
        has_calls = any(b.type == "tool_use" for b in content)
        stop = "tool_use" if has_calls else _FINISH.get(str(choice.get("finish_reason")), "end_turn")
        if stop == "max_tokens" and not content and usage.total_input >= self.info.window - 1:
            raise ContextOverflow(
                f"{self.name} stopped at the window after {usage.total_input} input tokens (window "
                f"{self.info.window}) with no answer; shrink the request and retry"
            )
        return ModelResponse(content=content, stop_reason=stop, usage=usage, model=str(data.get("model") or self.model_id))


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    return parts.scheme, (parts.hostname or "").lower(), parts.port


def key_for(url: str, key: str | None, pinned_url: str | None) -> str | None:
    """The key to send to `url`: the worker's key, unless the worker pins its server
    (LONGRUN_OPENAI_BASE_URL) and `url`, from a run's spec, is another origin. Otherwise anyone
    allowed to start a run could point it at their own server and collect the key."""
    if key and pinned_url and _origin(url) != _origin(pinned_url):
        log.warning("not sending LONGRUN_OPENAI_API_KEY to %s: the workers' key is for %s", url, pinned_url)
        return None
    return key


def usage_from_chat(data: dict[str, Any]) -> Usage:
    """`prompt_tokens` holds the cached ones too: what the window held is their sum here as well."""
    prompt = int(data.get("prompt_tokens") or 0)
    cached = int((data.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
    return Usage(input_tokens=max(0, prompt - cached), cache_read_input_tokens=min(cached, prompt),
                 output_tokens=int(data.get("completion_tokens") or 0))


def to_chat_messages(wire: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Anthropic-shaped wire messages (merged, pair-checked) as Chat Completions messages."""
    out: list[dict[str, Any]] = []
    for m in wire:
        blocks = m["content"]
        if m["role"] == "assistant":
            text = "\n".join(b["text"] for b in blocks if b.get("type") == "text" and b.get("text"))
            calls = [
                {"id": b["id"], "type": "function", "function": {"name": b["name"], "arguments": dump_arguments(b["input"])}}
                for b in blocks if b.get("type") == "tool_use"
            ]
            message: dict[str, Any] = {"role": "assistant", "content": text or (None if calls else "")}
            if calls:
                message["tool_calls"] = calls
            out.append(message)
            continue
        for b in blocks:
            if b.get("type") == "tool_result":
                content = result_text(b.get("content", ""))
                if b.get("is_error"):
                    content = f"ERROR: {content}"
                out.append({"role": "tool", "tool_call_id": b["tool_use_id"], "content": content})
        parts = [_user_part(b) for b in blocks if b.get("type") != "tool_result"]
        if parts:
            out.append({"role": "user", "content": parts})
    return out


def _user_part(block: dict[str, Any]) -> dict[str, Any]:
    if block.get("type") == "image":
        source = block.get("source") or {}
        if source.get("type") == "base64":
            return {"type": "image_url",
                    "image_url": {"url": f"data:{source.get('media_type')};base64,{source.get('data')}"}}
        return {"type": "image_url", "image_url": {"url": str(source.get("url", ""))}}
    if block.get("type") == "text":
        return {"type": "text", "text": str(block.get("text", ""))}
    log.warning("a %r block cannot go to a Chat Completions server; sent as a note", block.get("type"))
    return {"type": "text", "text": f"[{block.get('type')} block omitted]"}
