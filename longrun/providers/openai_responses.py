"""`openai:<model>`: OpenAI's models through the Responses API, with the official `openai` SDK.

One attempt per call (`max_retries=0`): Temporal owns retries and honours `retry-after`.

`store=false`, always: OpenAI keeps neither the request nor the answer, and longrun never uses
`previous_response_id`; every request carries the whole projection, as for every provider, so the
transcript in Postgres stays the one record of the conversation, compaction stays longrun's, and
a run can move to another model. What that implies (docs/CONTEXT.md, "store=false"): reasoning
items come back only encrypted (`include: ["reasoning.encrypted_content"]`), are kept verbatim on
the transcript's thinking blocks and sent back as they came; no stored item is ever referenced;
OpenAI's dashboard shows no logs of the run; the prompt cache still works (it is keyed by the
prefix, not by storage).

The request is longrun's Anthropic-shaped one, cleaned and pair-checked by the Anthropic
adapter's `to_api_messages`, then reshaped into input items: the system prompt is
`instructions`; user text and images are `message` items (`input_text`, `input_image`), tool
results `function_call_output` items (`call_id` kept), assistant text `message` items
(`output_text`), tool uses `function_call` items (`call_id` kept), reasoning items verbatim. The
state block stays the last input item. Usage: `input_tokens` includes the cached ones,
`input_tokens_details.cached_tokens` is the cache read. `count_tokens` asks
`POST /responses/input_tokens`.

In `provider` / `hybrid` context mode (`request.context`) the request carries
`context_management: [{"type": "compaction", "compact_threshold": <the policy's trigger>}]`. The
answer's opaque `compaction` item is kept verbatim (`openai_item`, so it is hashed into the
transcript chain with its message) and sent back as it came; `ModelResponse.context` says it
compacted, and the model activity writes longrun's structured summary as the block's text.
"""

from __future__ import annotations

import logging
from typing import Any

import openai

from longrun.errors import ContextOverflow
from longrun.models.blocks import Block, ThinkingBlock, block_adapter
from longrun.models.provider import ModelInfo, ModelRequest, ModelResponse, StopReason, Usage
from longrun.providers.anthropic_provider import to_api_messages
from longrun.providers.models_table import OPENAI_PREFIX, model_info
from longrun.providers.openai_common import (
    DEFAULT_TIMEOUT,
    dump_arguments,
    function_tools_responses,
    map_openai_error,
    parse_arguments,
    result_text,
)
from longrun.providers.provider_context import ITEM_KEY, openai_context, openai_report

log = logging.getLogger(__name__)

OPAQUE_COMPACTION = "[OpenAI compaction item: opaque, sent back verbatim]"
REASONING_MODELS = ("gpt-5", "o1", "o3", "o4")
_INCOMPLETE: dict[str, StopReason] = {"max_output_tokens": "max_tokens", "content_filter": "refusal"}


class OpenAIResponsesProvider:
    """An OpenAI model through the Responses API.

    Args:
        model_id: the API's model id (without the `openai:` prefix).
        api_key: the worker's OPENAI_API_KEY.
        base_url: the worker's OPENAI_BASE_URL; None = api.openai.com.
        store: keep OpenAI's copy of requests and answers. False unless a caller insists.
    """

    def __init__(
        self, model_id: str, *, api_key: str, base_url: str | None = None, timeout: float = DEFAULT_TIMEOUT,
        store: bool = False,
    ) -> None:
        self.model_id = model_id
        self.name = f"{OPENAI_PREFIX}{model_id}"
        self.info: ModelInfo = model_info(self.name)
        self.store = store
        self.client = openai.OpenAI(api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout)

    @property
    def base_url(self) -> str:
        return str(self.client.base_url)

    def close(self) -> None:
        self.client.close()

    def complete(self, request: ModelRequest) -> ModelResponse:
        """Send `request` once; the answer as longrun blocks.

        Raises:
            ContextOverflow: `context_length_exceeded`, or an answer cut off by the window.
            RetryableProviderError: 408/409/429/5xx, timeouts and connection errors.
            FatalProviderError: an orphaned tool id (before sending), or another 4xx.
        """
        try:
            response = self.client.responses.create(**self.payload(request))
        except openai.OpenAIError as exc:
            raise map_openai_error(exc, self.name) from exc
        return self.response(response.to_dict(mode="json", exclude_none=True))

    def count_tokens(self, request: ModelRequest) -> int:
        payload = self.payload(request)
        try:
            result = self.client.responses.input_tokens.count(
                model=payload["model"], input=payload["input"], instructions=payload.get("instructions"),
                tools=payload.get("tools"),
            )
        except openai.OpenAIError as exc:
            raise map_openai_error(exc, self.name) from exc
        return int(result.input_tokens)

    def payload(self, request: ModelRequest) -> dict[str, Any]:
        """The keyword arguments for `responses.create`: what goes on the wire."""
        payload: dict[str, Any] = {
            "model": self.model_id,
            "input": to_input_items(to_api_messages(request.messages)),
            "max_output_tokens": min(request.max_tokens, self.info.max_output),
            "store": self.store,
        }
        if request.system:
            payload["instructions"] = request.system
        if request.tools:
            payload["tools"] = function_tools_responses(request.tools)
        if not self.store and self.model_id.startswith(REASONING_MODELS):
            payload["include"] = ["reasoning.encrypted_content"]
        if request.context is not None:
            payload["context_management"] = openai_context(request.context)
        return payload

    def response(self, data: dict[str, Any]) -> ModelResponse:
        """A response's JSON as longrun's response."""
        content: list[Block] = []
        for item in data.get("output") or []:
            content.extend(parse_item(item))
        usage = usage_from_responses(data.get("usage") or {})
        has_calls = any(b.type == "tool_use" for b in content)
        reason = str((data.get("incomplete_details") or {}).get("reason") or "")
        stop: StopReason = "tool_use" if has_calls else _INCOMPLETE.get(reason, "end_turn")
        if data.get("status") == "incomplete" and not content and usage.total_input >= self.info.window - 1:
            raise ContextOverflow(f"{self.name} stopped at the window after {usage.total_input} input tokens "
                                  f"(window {self.info.window}); shrink the request and retry")
        return ModelResponse(content=content, stop_reason=stop, usage=usage, model=str(data.get("model") or self.model_id),
                             context=openai_report(data))


def usage_from_responses(data: dict[str, Any]) -> Usage:
    total = int(data.get("input_tokens") or 0)
    cached = int((data.get("input_tokens_details") or {}).get("cached_tokens") or 0)
    return Usage(input_tokens=max(0, total - cached), cache_read_input_tokens=min(cached, total),
                 output_tokens=int(data.get("output_tokens") or 0))


def parse_item(item: dict[str, Any]) -> list[Block]:
    """One output item as longrun blocks; ids kept (`call_id` is the tool use's id)."""
    kind = item.get("type")
    if kind == "message":
        texts = [str(p.get("text") or p.get("refusal") or "") for p in item.get("content") or []
                 if p.get("type") in ("output_text", "refusal")]
        return [block_adapter.validate_python({"type": "text", "text": t}) for t in texts if t]
    if kind == "function_call":
        return [block_adapter.validate_python({
            "type": "tool_use", "id": str(item.get("call_id") or item.get("id")), "name": str(item.get("name") or ""),
            "input": parse_arguments(item.get("arguments")),
        })]
    if kind == "reasoning":
        summary = "\n".join(str(s.get("text", "")) for s in item.get("summary") or [])
        block = ThinkingBlock(thinking=summary, signature=str(item.get("encrypted_content") or ""))
        return [ThinkingBlock.model_validate({**block.model_dump(), ITEM_KEY: item})]
    if kind == "compaction":  # opaque: the model activity writes longrun's own summary as its text
        return [block_adapter.validate_python({"type": "text", "text": OPAQUE_COMPACTION, ITEM_KEY: item})]
    log.warning("unsupported Responses output item %r, kept as text", kind)
    return [block_adapter.validate_python({"type": "text", "text": f"[{kind} item]", ITEM_KEY: item})]


def to_input_items(wire: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Anthropic-shaped wire messages (merged, pair-checked) as Responses input items."""
    items: list[dict[str, Any]] = []
    for m in wire:
        if m["role"] == "assistant":
            for b in m["content"]:
                kind = b.get("type")
                if ITEM_KEY in b:
                    if b[ITEM_KEY].get("type") == "reasoning" and not b[ITEM_KEY].get("encrypted_content"):
                        continue  # not sendable under store=false, and useless without its content
                    items.append(b[ITEM_KEY])
                elif kind == "text" and b.get("text"):
                    items.append({"type": "message", "role": "assistant",
                                  "content": [{"type": "output_text", "text": b["text"]}]})
                elif kind == "tool_use":
                    items.append({"type": "function_call", "call_id": b["id"], "name": b["name"],
                                  "arguments": dump_arguments(b["input"])})
            continue
        parts: list[dict[str, Any]] = []
        for b in m["content"]:
            kind = b.get("type")
            if kind == "tool_result":
                output = result_text(b.get("content", ""))
                items.append({"type": "function_call_output", "call_id": b["tool_use_id"],
                              "output": f"ERROR: {output}" if b.get("is_error") else output})
            elif kind == "text":
                parts.append({"type": "input_text", "text": str(b.get("text", ""))})
            elif kind == "image":
                source = b.get("source") or {}
                url = (f"data:{source.get('media_type')};base64,{source.get('data')}"
                       if source.get("type") == "base64" else str(source.get("url", "")))
                parts.append({"type": "input_image", "image_url": url})
        if parts:
            items.append({"type": "message", "role": "user", "content": parts})
    return items
