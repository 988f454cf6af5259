"""What the two OpenAI adapters share: error mapping, tool-call arguments, tools, text of a result.

Both adapters (`openai_chat` for `openai-compatible:`, `openai_responses` for `openai:`) speak
longrun's Anthropic-shaped blocks inside, and OpenAI's shapes on the wire. Their failures map the
same way, so that the activity, Temporal's retries and the overflow path do not care which model
ran:

- 408/409/429/5xx and connection failures: `RetryableProviderError`, with the server's
  `retry-after` (or `retry-after-ms`), so Temporal waits as long as the server asked;
- a context-length refusal (OpenAI's `context_length_exceeded`, vLLM's and OpenRouter's "maximum
  context length is N tokens", llama.cpp's `exceed_context_size_error`, HTTP 413):
  `ContextOverflow`, with the numbers restated as "prompt is too long: N tokens > M maximum" when
  the server gave them, so the retry aims by the server's own ratio (`retry_ceiling`);
- any other 4xx: `FatalProviderError` with the server's message.
"""

from __future__ import annotations

import json
import re
from typing import Any

import openai

from longrun.errors import ContextOverflow, FatalProviderError, ProviderError, RetryableProviderError
from longrun.models.provider import ToolSpec
from longrun.providers.retry_after import retry_after_seconds
from longrun.tools.registry import MALFORMED_ARGUMENTS

RETRYABLE_STATUS = frozenset({408, 409, 429})
DEFAULT_TIMEOUT = 600.0
NO_KEY = "no-key"
"""The bearer sent to an OpenAI-compatible server when the worker has no key for it: the SDK
insists on one, and servers that need none (Ollama, llama.cpp, a local vLLM) ignore it."""
MAX_RAW_ARGUMENTS = 2_000

_OVERFLOW_CODES = frozenset({"context_length_exceeded", "exceed_context_size_error", "string_above_max_length"})
_OVERFLOW_WORDS = re.compile(
    r"maximum context length|context length exceeded|context window|exceeds? the (?:available )?context size|"
    r"prompt is too long|too many tokens|reduce the length of the (?:messages|input)",
    re.IGNORECASE,
)
_MAXIMUM = re.compile(r"(?:maximum context length|context size|context window|n_ctx)\D{0,20}?(\d{3,})", re.IGNORECASE)
_REQUESTED = re.compile(
    r"(?:resulted in|requested(?: about)?|prompt has|n_prompt_tokens\W{0,4})\s*(\d{3,})", re.IGNORECASE
)


def function_tools_chat(tools: list[ToolSpec]) -> list[dict[str, Any]]:
    """Tools as Chat Completions wants them: `{"type": "function", "function": {...}}`."""
    return [
        {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.input_schema}}
        for t in tools
    ]


def function_tools_responses(tools: list[ToolSpec]) -> list[dict[str, Any]]:
    """Tools as the Responses API wants them: flat `{"type": "function", "name", ...}`. Not
    `strict`: strict mode demands every property be required, which longrun's schemas are not."""
    return [
        {"type": "function", "name": t.name, "description": t.description, "parameters": t.input_schema,
         "strict": False}
        for t in tools
    ]


def parse_arguments(raw: str | None) -> dict[str, Any]:
    """A function call's arguments (a JSON string) as a tool_use input.

    A server that sends malformed JSON (or JSON that is not an object) does not fail the run:
    the input becomes `{MALFORMED_ARGUMENTS: "<reason>: <raw text>"}`, which the tool registry
    refuses with a clear error tool result, so the model sees what it sent and tries again."""
    text = (raw or "").strip()
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError as exc:
        return {MALFORMED_ARGUMENTS: f"not valid JSON ({exc}): {text[:MAX_RAW_ARGUMENTS]}"}
    if not isinstance(value, dict):
        return {MALFORMED_ARGUMENTS: f"a JSON {type(value).__name__}, not an object: {text[:MAX_RAW_ARGUMENTS]}"}
    return value


def dump_arguments(tool_input: dict[str, Any]) -> str:
    """A tool_use input as the arguments string sent back (keys sorted: a stable prefix caches)."""
    return json.dumps(tool_input, sort_keys=True, ensure_ascii=False)


def result_text(content: str | list[dict[str, Any]]) -> str:
    """A tool result's content as one string (function outputs are text; an image in a result is
    named, not sent)."""
    if isinstance(content, str):
        return content
    parts = []
    for part in content:
        if part.get("type") == "text":
            parts.append(str(part.get("text", "")))
        else:
            parts.append(f"[{part.get('type', 'block')} omitted: this provider takes text tool results]")
    return "\n".join(parts)


def _error_fields(exc: openai.APIStatusError) -> tuple[str, str]:
    """(code, message) of an error body, in OpenAI's shape or the shapes compatible servers use."""
    body = exc.body
    error = body.get("error", body) if isinstance(body, dict) else None
    if isinstance(error, dict):
        code = str(error.get("code") or error.get("type") or "")
        message = str(error.get("message") or exc.message)
        return code, message
    if isinstance(error, str):
        return "", error
    return "", str(exc.message)


def overflow_message(message: str, provider: str) -> str:
    """The refusal restated with the numbers the retry ceiling reads, when the server gave them."""
    maximum, requested = _MAXIMUM.search(message), _REQUESTED.search(message)
    if maximum and requested and int(requested.group(1)) > int(maximum.group(1)):
        return (f"prompt is too long: {requested.group(1)} tokens > {maximum.group(1)} maximum "
                f"({provider} said: {message})")
    return f"{provider} refused the request as too long: {message}"


def map_openai_error(exc: openai.OpenAIError, provider: str) -> ProviderError:
    """The longrun error for an `openai` SDK error (see the module docstring)."""
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        code, message = _error_fields(exc)
        if status == 413 or (status == 400 and (code in _OVERFLOW_CODES or _OVERFLOW_WORDS.search(message))):
            return ContextOverflow(overflow_message(message, provider))
        label = f"{provider} {status}" + (f" {code}" if code else "")
        if status in RETRYABLE_STATUS or status >= 500:
            return RetryableProviderError(f"{label}: {message}", status=status,
                                          retry_after=retry_after_seconds(exc.response.headers))
        hint = ""
        if status in (401, 403):
            hint = "; check the worker's key (docs/CONFIGURATION.md, Models)"
        elif status == 404:
            hint = "; check the model name and the base URL (it usually ends in /v1)"
        return FatalProviderError(f"{label}: {message}{hint}", status=status)
    if isinstance(exc, openai.APIConnectionError):  # includes timeouts
        return RetryableProviderError(f"could not reach {provider}: {exc}", status=None)
    return FatalProviderError(f"{provider} SDK error: {exc}")
