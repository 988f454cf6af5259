"""A local fake of OpenAI's APIs, for tests that run the real `openai` SDK over real HTTP.

`FakeOpenAI` is a stdlib HTTP server on 127.0.0.1 (a random free port) implementing
`POST /v1/chat/completions` (what vLLM, Ollama, llama.cpp and OpenRouter serve) and
`POST /v1/responses` (OpenAI's Responses API). It behaves like those servers where longrun
depends on it:

- replays queued answers (`enqueue_text`, `enqueue_tool_call` with raw `arguments`, so a test
  can send malformed JSON), else asks a policy (`set_policy`: a longrun `ModelRequest` rebuilt
  from the wire -> a list of longrun-shaped blocks), else answers "ok"; `scripted_policy()`
  answers like longrun's offline scripted agent;
- validates the request shape and answers 400 as the servers do: Chat: roles, per-role fields
  (an unknown key, such as longrun's internal `longrun_*`, is refused), every assistant
  `tool_calls` id answered by `role: tool` messages right after it, no tool message without its
  call, `arguments` a string; Responses: item types and fields, every `function_call` with its
  `function_call_output` and vice versa, and, with `store: false`, no reference to a stored
  item (`item_reference`, or an `rs_` reasoning item without `encrypted_content`): "Items are
  not persisted when `store` is set to false";
- counts tokens with its own tokenizer (the one of tests/fake_anthropic.py: words per started 5
  letters, digits and punctuation one each), deliberately different from longrun's estimator;
- answers a context-length error above `window`: Chat in vLLM's words ("This model's maximum
  context length is M tokens. However, you requested N tokens ..."), Responses in OpenAI's
  (`context_length_exceeded`, no numbers);
- fails on demand (`fail_next(429, retry_after=3)`, 500, ...), before any validation;
- reports cached tokens: the longest common token prefix with the previous request of the same
  API, rounded down to 16-token blocks (vLLM's block size): Chat's
  `usage.prompt_tokens_details.cached_tokens`, Responses' `usage.input_tokens_details.cached_tokens`;
- Responses server-side compaction, as OpenAI documents it: with `context_management:
  [{"type": "compaction", "compact_threshold": N}]`, a request whose input is over N tokens is
  answered with an opaque `compaction` item (`encrypted_content`) before the reply; a later
  request that carries that item is read as the compacted state followed by the items after
  it (the items before it are ignored, and its tokens are the item's few);
- records every request (path, headers, JSON body) in `requests`, rejected ones included.
"""

from __future__ import annotations

import base64
import json
import threading
import uuid
from collections import deque
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from tests.fake_anthropic import RecordedRequest, _text_tokens

Answer = list[dict[str, Any]]
"""A queued or policy answer: longrun-shaped blocks (`text`, `tool_use` with `input` or with
`raw_arguments`, `thinking`)."""
Policy = Callable[[Any], Answer]

CACHE_BLOCK = 16
COMPACTION_TOKENS = 40
"""What a compaction item costs on input, whatever it replaced."""

_CHAT_FIELDS = {
    "system": {"role", "content", "name"},
    "developer": {"role", "content", "name"},
    "user": {"role", "content", "name"},
    "assistant": {"role", "content", "name", "tool_calls", "refusal", "reasoning_content"},
    "tool": {"role", "content", "tool_call_id"},
}
_ITEM_FIELDS = {
    "message": {"type", "role", "content", "id", "status"},
    "function_call": {"type", "call_id", "name", "arguments", "id", "status"},
    "function_call_output": {"type", "call_id", "output", "id", "status"},
    "reasoning": {"type", "id", "summary", "encrypted_content", "content", "status"},
    "compaction": {"type", "id", "encrypted_content"},
    "item_reference": {"type", "id"},
}
_CONTENT_TYPES = {"input_text", "output_text", "input_image", "refusal"}


class FakeError(Exception):
    def __init__(self, status: int, message: str, *, code: str | None = None, type: str = "invalid_request_error",
                 headers: dict[str, str] | None = None, param: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.code, self.type, self.param = status, message, code, type, param
        self.headers = dict(headers or {})


def _tokens_of(value: Any) -> list[str]:
    if isinstance(value, str):
        return _text_tokens(value)
    return _text_tokens(json.dumps(value, sort_keys=True))


def _common_prefix(a: list[str], b: list[str]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


class FakeOpenAI:
    """The fake server. Start with `start()` or `with FakeOpenAI() as fake:`.

    Attributes:
        url: the SDK's base URL (`http://127.0.0.1:<port>/v1`).
        api_key: when set, requests must carry `Authorization: Bearer <api_key>` (else 401).
        window: requests counted above this many tokens get the context-length error.
        requests: every request received, in order.
        compactions: the `encrypted_content` of every compaction item issued -> the token stream
            it stands for (what the fake "remembers" of the compacted context).
    """

    def __init__(self, *, window: int = 200_000, api_key: str | None = None) -> None:
        self.window = window
        self.api_key = api_key
        self.requests: list[RecordedRequest] = []
        self.compactions: dict[str, list[str]] = {}
        self._answers: deque[Answer] = deque()
        self._failures: deque[FakeError] = deque()
        self._policy: Policy | None = None
        self._previous: dict[str, list[str]] = {}
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> FakeOpenAI:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), name="fake-openai", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._server is not None, "FakeOpenAI is not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    # -- scripting ---------------------------------------------------------------------------

    def enqueue(self, blocks: Answer) -> None:
        with self._lock:
            self._answers.append(blocks)

    def enqueue_text(self, text: str) -> None:
        self.enqueue([{"type": "text", "text": text}])

    def enqueue_tool_call(self, name: str, arguments: dict[str, Any] | str, *, id: str | None = None,
                          text: str | None = None) -> None:
        """Queue a tool call; `arguments` as a string goes on the wire as it is (malformed JSON too)."""
        raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
        blocks: Answer = [{"type": "text", "text": text}] if text else []
        blocks.append({"type": "tool_use", "id": id or f"call_{uuid.uuid4().hex[:20]}", "name": name, "raw_arguments": raw})
        self.enqueue(blocks)

    def set_policy(self, policy: Policy | None) -> None:
        self._policy = policy

    def fail_next(self, status: int, retry_after: float | None = None, times: int = 1, *, message: str | None = None) -> None:
        headers = {"retry-after": str(retry_after if not float(retry_after).is_integer() else int(retry_after))} \
            if retry_after is not None else {}
        text = message or {429: "Rate limit reached for requests", 503: "Service unavailable"}.get(status, "Server error")
        kind = {429: "rate_limit_error"}.get(status, "server_error")
        with self._lock:
            for _ in range(times):
                self._failures.append(FakeError(status, text, type=kind, headers=headers))

    def of(self, path: str) -> list[RecordedRequest]:
        """The recorded requests to `path` ("/v1/chat/completions" or "/v1/responses")."""
        return [r for r in self.requests if r.path == path]

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        return self.of("/v1/chat/completions")

    @property
    def responses_requests(self) -> list[RecordedRequest]:
        return self.of("/v1/responses")

    # -- serving -----------------------------------------------------------------------------

    def handle(self, rec: RecordedRequest) -> tuple[int, dict[str, Any], dict[str, str]]:
        try:
            if rec.path not in ("/v1/chat/completions", "/v1/responses", "/v1/responses/input_tokens"):
                raise FakeError(404, f"Unknown request URL: POST {rec.path}", code="unknown_url")
            if self.api_key is not None and rec.headers.get("authorization") != f"Bearer {self.api_key}":
                raise FakeError(401, "Incorrect API key provided", code="invalid_api_key")
            with self._lock:
                failure = self._failures.popleft() if self._failures else None
            if failure is not None:
                raise failure
            if rec.path == "/v1/chat/completions":
                return 200, self._chat(rec.body), {}
            return 200, self._responses(rec.body, count_only=rec.path.endswith("input_tokens")), {}
        except FakeError as err:
            error = {"message": err.message, "type": err.type, "param": err.param, "code": err.code}
            return err.status, {"error": error}, err.headers

    def _answer(self, request: Any) -> Answer:
        with self._lock:
            queued = self._answers.popleft() if self._answers else None
        if queued is not None:
            return queued
        if self._policy is not None:
            return self._policy(request)
        return [{"type": "text", "text": "ok"}]

    def _cached(self, api: str, stream: list[str]) -> int:
        with self._lock:
            previous, self._previous[api] = self._previous.get(api, []), stream
        return _common_prefix(previous, stream) // CACHE_BLOCK * CACHE_BLOCK

    # -- Chat Completions --------------------------------------------------------------------

    def _chat(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise FakeError(400, "'messages' is a required property", param="messages")
        problem = validate_chat(messages) or _validate_chat_tools(body.get("tools"))
        if problem:
            raise FakeError(400, problem, param="messages")
        stream = chat_token_stream(body)
        total = len(stream)
        max_tokens = int(body.get("max_tokens") or body.get("max_completion_tokens") or 0)
        if total + max_tokens > self.window:
            raise FakeError(400, f"This model's maximum context length is {self.window} tokens. However, you requested "
                            f"{total + max_tokens} tokens ({total} in the messages, {max_tokens} in the completion). "
                            "Please reduce the length of the messages or completion.", type="BadRequestError")
        cached = self._cached("chat", stream)
        blocks = self._answer(chat_to_request(body))
        text = "\n".join(b["text"] for b in blocks if b.get("type") == "text")
        calls = [{"id": b["id"], "type": "function",
                  "function": {"name": b["name"], "arguments": b.get("raw_arguments") or json.dumps(b.get("input", {}))}}
                 for b in blocks if b.get("type") == "tool_use"]
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        if calls:
            message["tool_calls"] = calls
        thinking = "\n".join(b["thinking"] for b in blocks if b.get("type") == "thinking")
        if thinking:
            message["reasoning_content"] = thinking
        out_tokens = max(1, len(_tokens_of(text)) + sum(len(_tokens_of(c["function"])) for c in calls))
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:12]}", "object": "chat.completion", "created": 1_700_000_000,
            "model": body.get("model", "fake"),
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {"prompt_tokens": total, "completion_tokens": out_tokens, "total_tokens": total + out_tokens,
                      "prompt_tokens_details": {"cached_tokens": cached}},
        }

    # -- Responses ---------------------------------------------------------------------------

    def _responses(self, body: dict[str, Any], *, count_only: bool = False) -> dict[str, Any]:
        items = body.get("input")
        if isinstance(items, str):
            items = [{"role": "user", "content": items}]
        if not isinstance(items, list) or not items:
            raise FakeError(400, "Missing required parameter: 'input'.", param="input")
        problem = validate_items(items, store=body.get("store", True) is not False) or _validate_response_tools(
            body.get("tools"))
        if problem:
            raise FakeError(400, problem, param="input")
        stream = self.responses_token_stream(body)
        if count_only:
            return {"object": "response.input_tokens", "input_tokens": len(stream)}
        if len(stream) > self.window:
            raise FakeError(400, "Your input exceeds the context window of this model. Please adjust your input and "
                            "try again.", code="context_length_exceeded", param="input")
        cached = self._cached("responses", stream)
        output: list[dict[str, Any]] = []
        threshold = next((int(c["compact_threshold"]) for c in body.get("context_management") or []
                          if c.get("type") == "compaction" and c.get("compact_threshold")), None)
        if threshold is not None and len(stream) > threshold:
            secret = base64.b64encode(uuid.uuid4().bytes * 4).decode()
            with self._lock:
                self.compactions[secret] = stream
            output.append({"type": "compaction", "id": f"cmp_{uuid.uuid4().hex[:16]}", "encrypted_content": secret})
        blocks = self._answer(responses_to_request(body, self.compactions))
        for b in blocks:
            if b.get("type") == "thinking":
                output.append({"type": "reasoning", "id": f"rs_{uuid.uuid4().hex[:16]}",
                               "summary": [{"type": "summary_text", "text": b["thinking"]}],
                               "encrypted_content": base64.b64encode(b["thinking"].encode()).decode()})
            elif b.get("type") == "text":
                output.append({"type": "message", "id": f"msg_{uuid.uuid4().hex[:16]}", "role": "assistant",
                               "status": "completed",
                               "content": [{"type": "output_text", "text": b["text"], "annotations": []}]})
            elif b.get("type") == "tool_use":
                output.append({"type": "function_call", "id": f"fc_{uuid.uuid4().hex[:16]}", "call_id": b["id"],
                               "name": b["name"], "status": "completed",
                               "arguments": b.get("raw_arguments") or json.dumps(b.get("input", {}))})
        out_tokens = max(1, sum(len(_tokens_of(o.get("content") or o.get("arguments") or "")) for o in output))
        return {
            "id": f"resp_{uuid.uuid4().hex[:16]}", "object": "response", "created_at": 1_700_000_000,
            "status": "completed", "model": body.get("model", "fake"), "output": output,
            "store": body.get("store", True), "error": None, "incomplete_details": None, "parallel_tool_calls": True,
            "tool_choice": "auto", "tools": body.get("tools") or [],
            "usage": {"input_tokens": len(stream), "input_tokens_details": {"cached_tokens": cached},
                      "output_tokens": out_tokens, "output_tokens_details": {"reasoning_tokens": 0},
                      "total_tokens": len(stream) + out_tokens},
        }

    def responses_token_stream(self, body: dict[str, Any]) -> list[str]:
        """The request's tokens: instructions, tools, then the items after the last compaction
        item (which costs COMPACTION_TOKENS)."""
        stream = ["<start>", *_tokens_of(str(body.get("instructions") or ""))]
        for tool in body.get("tools") or []:
            stream += ["<tool>", *_tokens_of(tool)]
        items = body["input"] if isinstance(body["input"], list) else [{"role": "user", "content": body["input"]}]
        last = max((i for i, it in enumerate(items) if it.get("type") == "compaction"), default=None)
        if last is not None:
            stream += ["<compaction>"] * COMPACTION_TOKENS
            items = items[last + 1:]
        for it in items:
            stream += [f"<{it.get('type', 'message')}>", *_tokens_of({k: v for k, v in it.items() if k != "id"})]
        return stream


def chat_token_stream(body: dict[str, Any]) -> list[str]:
    stream = ["<start>"]
    for tool in body.get("tools") or []:
        stream += ["<tool>", *_tokens_of(tool)]
    for m in body["messages"]:
        stream += [f"<{m.get('role')}>", *_tokens_of(m.get("content") or ""), *_tokens_of(m.get("tool_calls") or "")]
    return stream


def validate_chat(messages: list[dict[str, Any]]) -> str | None:
    """Chat Completions' checks: roles, fields, and tool calls answered right after they are made."""
    open_calls: list[str] = []
    for i, m in enumerate(messages):
        role = m.get("role")
        fields = _CHAT_FIELDS.get(str(role))
        if fields is None:
            return f"messages[{i}].role: unknown role {role!r}"
        extra = set(m) - fields
        if extra:
            return f"messages[{i}]: Unrecognized request argument supplied: {sorted(extra)[0]}"
        if role == "tool":
            if m.get("tool_call_id") not in open_calls:
                return (f"messages[{i}]: messages with role 'tool' must be a response to a preceeding message with "
                        f"'tool_calls' (tool_call_id {m.get('tool_call_id')!r})")
            open_calls.remove(m["tool_call_id"])
            if not isinstance(m.get("content"), str):
                return f"messages[{i}].content: a tool message's content must be a string"
            continue
        if open_calls:
            return ("An assistant message with 'tool_calls' must be followed by tool messages responding to each "
                    f"'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(open_calls)}")
        content = m.get("content")
        if isinstance(content, list):
            for j, part in enumerate(content):
                if part.get("type") not in ("text", "image_url") or set(part) - {"type", "text", "image_url"}:
                    return f"messages[{i}].content[{j}]: invalid content part {sorted(part)}"
        elif content is not None and not isinstance(content, str):
            return f"messages[{i}].content: must be a string or a list of parts"
        if role == "assistant":
            for call in m.get("tool_calls") or []:
                fn = call.get("function") or {}
                if call.get("type") != "function" or not call.get("id") or not isinstance(fn.get("arguments"), str) \
                        or not fn.get("name") or set(call) - {"id", "type", "function"}:
                    return f"messages[{i}].tool_calls: each needs id, type 'function', function.name and string arguments"
                open_calls.append(call["id"])
            if content is None and not m.get("tool_calls"):
                return f"messages[{i}]: an assistant message needs content or tool_calls"
    if open_calls:
        return f"the last assistant message's tool_calls were not answered: {', '.join(open_calls)}"
    return None


def _validate_chat_tools(tools: Any) -> str | None:
    for i, t in enumerate(tools or []):
        fn = t.get("function") or {}
        if t.get("type") != "function" or not fn.get("name") or not isinstance(fn.get("parameters", {}), dict):
            return f"tools[{i}]: expected {{'type': 'function', 'function': {{'name', 'description', 'parameters'}}}}"
    return None


def _validate_response_tools(tools: Any) -> str | None:
    for i, t in enumerate(tools or []):
        if t.get("type") != "function" or not t.get("name") or "function" in t:
            return f"tools[{i}]: Missing required parameter: 'tools[{i}].name' (a flat function tool)"
    return None


def validate_items(items: list[dict[str, Any]], *, store: bool) -> str | None:
    """The Responses API's checks on `input` items (see the module docstring)."""
    calls: dict[str, int] = {}
    outputs: set[str] = set()
    for i, it in enumerate(items):
        kind = it.get("type", "message")
        fields = _ITEM_FIELDS.get(str(kind))
        if fields is None:
            return f"Invalid value: '{kind}'. Supported values are: {', '.join(sorted(_ITEM_FIELDS))}. (input[{i}].type)"
        extra = set(it) - fields
        if extra:
            return f"Unknown parameter: 'input[{i}].{sorted(extra)[0]}'."
        if not store and (kind == "item_reference" or (kind == "reasoning" and not it.get("encrypted_content"))):
            return (f"Item with id '{it.get('id')}' not found. Items are not persisted when `store` is set to false. "
                    "Try again with `store` set to true, or remove this item from your input.")
        if kind == "message":
            if it.get("role") not in ("user", "assistant", "system", "developer"):
                return f"input[{i}].role: invalid role {it.get('role')!r}"
            content = it.get("content")
            if isinstance(content, list):
                for j, part in enumerate(content):
                    if part.get("type") not in _CONTENT_TYPES:
                        return f"Invalid value: '{part.get('type')}' (input[{i}].content[{j}].type)"
                    if it.get("role") == "assistant" and part.get("type") == "input_text":
                        return f"input[{i}].content[{j}]: an assistant message takes 'output_text', not 'input_text'"
        elif kind == "function_call":
            if not it.get("call_id") or not it.get("name") or not isinstance(it.get("arguments"), str):
                return f"input[{i}]: a function_call needs call_id, name and string arguments"
            calls[it["call_id"]] = i
        elif kind == "function_call_output":
            if it.get("call_id") not in calls:
                return f"No tool call found for function call output with call_id {it.get('call_id')}."
            if not isinstance(it.get("output"), str):
                return f"input[{i}].output: must be a string"
            outputs.add(it["call_id"])
    missing = [c for c in calls if c not in outputs]
    if missing:
        return f"No tool output found for function call {missing[0]}."
    return None


# ---------------------------------------------------------------------------------------------
# The wire read back as a longrun request, for policies
# ---------------------------------------------------------------------------------------------


def _arguments(raw: str) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _parts_text(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return [{"type": "text", "text": p.get("text", "")} for p in content or [] if "text" in p]


def _to_request(system: str, turns: list[tuple[str, list[dict[str, Any]]]], tools: list[dict[str, Any]],
                model: str) -> Any:
    from longrun.models.blocks import Message
    from longrun.models.provider import ModelRequest, ToolSpec

    merged: list[tuple[str, list[dict[str, Any]]]] = []
    for role, blocks in turns:
        if merged and merged[-1][0] == role:
            merged[-1][1].extend(blocks)
        else:
            merged.append((role, list(blocks)))
    messages = [Message.from_wire({"role": r, "content": b or [{"type": "text", "text": ""}]}) for r, b in merged]
    return ModelRequest(model=model, system=system, messages=messages,
                        tools=[ToolSpec(**t) for t in tools])


def chat_to_request(body: dict[str, Any]) -> Any:
    """A Chat Completions body as a longrun ModelRequest (for policies)."""
    system, turns = "", []
    for m in body["messages"]:
        role = m["role"]
        if role in ("system", "developer"):
            system += str(m.get("content") or "")
        elif role == "tool":
            turns.append(("user", [{"type": "tool_result", "tool_use_id": m["tool_call_id"], "content": m["content"]}]))
        elif role == "user":
            turns.append(("user", _parts_text(m.get("content"))))
        else:
            blocks = _parts_text(m.get("content"))
            blocks += [{"type": "tool_use", "id": c["id"], "name": c["function"]["name"],
                        "input": _arguments(c["function"]["arguments"])} for c in m.get("tool_calls") or []]
            turns.append(("assistant", blocks))
    tools = [{"name": t["function"]["name"], "description": t["function"].get("description", ""),
              "input_schema": t["function"].get("parameters", {})} for t in body.get("tools") or []]
    return _to_request(system, turns, tools, str(body.get("model")))


def responses_to_request(body: dict[str, Any], compactions: dict[str, list[str]]) -> Any:
    """A Responses body as a longrun ModelRequest (for policies); a compaction item reads as a
    note of how many tokens it stands for."""
    turns: list[tuple[str, list[dict[str, Any]]]] = []
    items = body["input"] if isinstance(body["input"], list) else [{"role": "user", "content": body["input"]}]
    for it in items:
        kind = it.get("type", "message")
        if kind == "message":
            turns.append(("assistant" if it["role"] == "assistant" else "user", _parts_text(it.get("content"))))
        elif kind == "function_call":
            turns.append(("assistant", [{"type": "tool_use", "id": it["call_id"], "name": it["name"],
                                         "input": _arguments(it["arguments"])}]))
        elif kind == "function_call_output":
            turns.append(("user", [{"type": "tool_result", "tool_use_id": it["call_id"], "content": it["output"]}]))
        elif kind == "compaction":
            n = len(compactions.get(str(it.get("encrypted_content")), []))
            turns.append(("user", [{"type": "text", "text": f"(compacted context of {n} tokens)"}]))
    tools = [{"name": t["name"], "description": t.get("description", ""), "input_schema": t.get("parameters", {})}
             for t in body.get("tools") or []]
    return _to_request(str(body.get("instructions") or ""), turns, tools, str(body.get("model")))


def scripted_policy() -> Policy:
    """Answers like longrun's offline scripted agent, so a whole run can go over the fake."""
    from longrun.providers.scripted import ScriptedProvider

    agent = ScriptedProvider()

    def policy(request: Any) -> Answer:
        return [b.model_dump(mode="json", exclude_none=True) for b in agent.complete(request).content]

    return policy


def _make_handler(fake: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            parts = urlsplit(self.path)
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {"_unparseable": raw.decode("utf-8", "replace")}
            rec = RecordedRequest(method="POST", path=parts.path, query=parts.query,
                                  headers={k.lower(): v for k, v in self.headers.items()},
                                  body=body if isinstance(body, dict) else {"_body": body},
                                  client_host=str(self.client_address[0]))
            with fake._lock:
                fake.requests.append(rec)
            try:
                status, payload, headers = fake.handle(rec)
            except Exception as exc:  # a broken policy shows up as a 500, not a hung client
                status, payload, headers = 500, {"error": {"message": f"fake server error: {exc!r}",
                                                           "type": "server_error", "param": None, "code": None}}, {}
            rec.status, rec.response = status, payload
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

    return Handler


__all__ = ["FakeOpenAI", "chat_token_stream", "scripted_policy", "validate_chat", "validate_items"]
