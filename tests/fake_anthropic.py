"""A local fake of the Anthropic Messages API, for tests that run the real SDK over real HTTP.

`FakeAnthropic` is a stdlib HTTP server on 127.0.0.1 (a random free port) implementing
`POST /v1/messages` and `POST /v1/messages/count_tokens` (query strings ignored). It behaves like
the real API where longrun depends on it:

- replays queued responses (`enqueue_response`, `enqueue_text`, `enqueue_tool_use`), else asks a
  policy (`set_policy(callable)`: request body dict -> response body dict), else answers "ok";
  `scripted_policy()` answers like longrun's offline scripted agent;
- counts tokens with its own tokenizer (`fake_token_count`), deliberately *different* from
  longrun's estimator, so calibration is tested against something else;
- answers 400 `invalid_request_error` "prompt is too long: N tokens > M maximum" above `window`;
- answers 400 for a `tool_use` without its `tool_result` in the next user message, or a
  `tool_result` without its `tool_use` in the previous assistant message, and for block fields the
  API does not know (e.g. longrun's internal `longrun_*` keys);
- answers 401 without an `x-api-key` header;
- fails on demand (`fail_next(429, retry_after=3)`, 529, 500, ...), consuming a queue of failures;
- simulates prompt caching: the longest common token prefix with the previous /v1/messages request
  is reported as `cache_read_input_tokens`; the rest of the request up to its last message is
  reported as `cache_creation_input_tokens`; the remainder as `input_tokens`. Their sum is always
  the fake tokenizer's count of the whole request;
- records every request (path, query, headers, JSON body, client address) in `requests`, in
  arrival order, including the ones it rejected;
- implements context management as documented (tests/fake_anthropic_context.py): the beta
  headers, the edits' shapes, `clear_tool_uses_20250919` (old tool results cleared past `keep`
  once the input is over the trigger, reported in `context_management.applied_edits`) and server
  compaction `compact_20260112` (a `compaction` block answered, and read back on later requests
  as the start of the context). Policies see compaction blocks as text blocks.

Use it through the `fake_anthropic` fixture (tests/fixtures/anthropic.py) or as a context manager.
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from tests import fake_anthropic_context as fctx

Policy = Callable[[dict[str, Any]], dict[str, Any]]

DEFAULT_WINDOW = 200_000
DEFAULT_MODEL = "claude-sonnet-4-6"

# Fields the API accepts per block type (a subset of the real schema, enough to catch leaks of
# longrun's internal keys). Unknown keys get the API's "Extra inputs are not permitted".
_KNOWN_BLOCK_FIELDS: dict[str, set[str]] = {
    "text": {"type", "text", "cache_control", "citations"},
    "thinking": {"type", "thinking", "signature"},
    "redacted_thinking": {"type", "data"},
    "tool_use": {"type", "id", "name", "input", "cache_control", "caller"},
    "tool_result": {"type", "tool_use_id", "content", "is_error", "cache_control"},
    "image": {"type", "source", "cache_control"},
    "compaction": {"type", "content", "encrypted_content", "signature", "cache_control", "tool_changes"},
    "document": {"type", "source", "cache_control", "title", "context", "citations"},
}

# ---------------------------------------------------------------------------------------------
# The fake tokenizer
# ---------------------------------------------------------------------------------------------

_TOKEN_RE = re.compile(r"[A-Za-z]+|\d|[^\sA-Za-z\d]")


def _text_tokens(text: str) -> list[str]:
    """Words count one token per started 5 letters, digits and punctuation one each."""
    out: list[str] = []
    for piece in _TOKEN_RE.findall(text):
        if piece[0].isalpha() and len(piece) > 5:
            out.extend(piece[i : i + 5] for i in range(0, len(piece), 5))
        else:
            out.append(piece)
    return out


def _block_token_stream(block: Any) -> list[str]:
    if isinstance(block, str):
        return ["<text>", *_text_tokens(block)]
    if not isinstance(block, dict):
        return ["<?>"]
    kind = block.get("type")
    if kind == "text":
        return ["<text>", *_text_tokens(str(block.get("text", "")))]
    if kind == "thinking":
        return ["<thinking>", *_text_tokens(str(block.get("thinking", "")))]
    if kind == "redacted_thinking":
        return ["<redacted>"] * (1 + len(str(block.get("data", ""))) // 8)
    if kind == "tool_use":
        return ["<tool_use>", str(block.get("name", "")), *_text_tokens(json.dumps(block.get("input", {}), sort_keys=True))]
    if kind == "tool_result":
        content = block.get("content", "")
        head = ["<tool_result>", "<error>" if block.get("is_error") else "<ok>"]
        if isinstance(content, str):
            return head + _text_tokens(content)
        return head + [t for c in content for t in _block_token_stream(c)]
    if kind == "image":
        return ["<image>"] * 1_000
    return ["<block>", *_text_tokens(json.dumps(block, sort_keys=True))]


def _message_token_stream(message: dict[str, Any]) -> list[str]:
    content = message.get("content", "")
    blocks = [content] if isinstance(content, str) else list(content)
    return [f"<{message.get('role')}>", *[t for b in blocks for t in _block_token_stream(b)]]


def request_token_stream(body: dict[str, Any]) -> tuple[list[str], int]:
    """The fake tokenizer's tokens of a request, and how many of them precede the last message."""
    stream: list[str] = ["<start>"]
    system = body.get("system")
    if isinstance(system, str):
        stream += _text_tokens(system)
    elif isinstance(system, list):
        stream += [t for b in system for t in _block_token_stream(b)]
    for tool in body.get("tools") or []:
        stream += ["<tool>", *_text_tokens(json.dumps(tool, sort_keys=True))]
    messages = list(body.get("messages") or [])
    for m in messages[:-1]:
        stream += _message_token_stream(m)
    before_last = len(stream)
    if messages:
        stream += _message_token_stream(messages[-1])
    return stream, before_last


def fake_token_count(body: dict[str, Any]) -> int:
    """Input tokens of a request as the fake server counts them."""
    return len(request_token_stream(body)[0])


# ---------------------------------------------------------------------------------------------
# Responses and errors
# ---------------------------------------------------------------------------------------------


class FakeAPIError(Exception):
    """Raise from a policy (or queue with `enqueue_error`) to answer with an API error."""

    def __init__(self, status: int, message: str, *, type: str | None = None, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type or _ERROR_TYPES.get(status, "api_error")
        self.headers = dict(headers or {})


_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    408: "timeout_error",
    409: "conflict_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


def text_response(text: str, *, stop_reason: str = "end_turn") -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "stop_reason": stop_reason}


def tool_use_response(name: str, input: dict[str, Any], *, id: str | None = None, text: str | None = None) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    content.append({"type": "tool_use", "id": id or f"toolu_{uuid.uuid4().hex[:20]}", "name": name, "input": input})
    return {"content": content, "stop_reason": "tool_use"}


def _output_tokens(content: Iterable[Any]) -> int:
    return max(1, sum(len(_block_token_stream(b)) for b in content))


@dataclass
class RecordedRequest:
    """One HTTP request the fake received."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: dict[str, Any]
    client_host: str
    status: int = 0
    response: dict[str, Any] = field(default_factory=dict)


def validate_tool_pairing(messages: list[dict[str, Any]]) -> str | None:
    """The API's check that every tool_use has its tool_result in the next message and vice versa.
    Returns the API's error message, or None when the messages are well formed."""

    def blocks(m: dict[str, Any]) -> list[dict[str, Any]]:
        c = m.get("content", "")
        return [b for b in c if isinstance(b, dict)] if isinstance(c, list) else []

    for i, m in enumerate(messages):
        if m.get("role") == "assistant":
            uses = [b.get("id") for b in blocks(m) if b.get("type") == "tool_use"]
            nxt = messages[i + 1] if i + 1 < len(messages) else None
            answered = (
                {b.get("tool_use_id") for b in blocks(nxt) if b.get("type") == "tool_result"}
                if nxt is not None and nxt.get("role") == "user"
                else set()
            )
            missing = [u for u in uses if u not in answered]
            if missing:
                return (
                    f"messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after: "
                    f"{', '.join(map(str, missing))}. Each `tool_use` block must have a corresponding "
                    "`tool_result` block in the next message."
                )
        else:
            results = [(j, b.get("tool_use_id")) for j, b in enumerate(blocks(m)) if b.get("type") == "tool_result"]
            prev = messages[i - 1] if i > 0 else None
            used = (
                {b.get("id") for b in blocks(prev) if b.get("type") == "tool_use"}
                if prev is not None and prev.get("role") == "assistant"
                else set()
            )
            for j, tid in results:
                if tid not in used:
                    return (
                        f"messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: {tid}. "
                        "Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
                    )
    return None


def validate_block_fields(messages: list[dict[str, Any]]) -> str | None:
    for i, m in enumerate(messages):
        content = m.get("content", "")
        if not isinstance(content, list):
            continue
        for j, b in enumerate(content):
            if not isinstance(b, dict):
                return f"messages.{i}.content.{j}: Input should be a valid dictionary"
            known = _KNOWN_BLOCK_FIELDS.get(str(b.get("type")))
            if known is None:
                return f"messages.{i}.content.{j}: unknown block type {b.get('type')!r}"
            for key in b:
                if key not in known:
                    return f"messages.{i}.content.{j}.{b['type']}.{key}: Extra inputs are not permitted"
    return None


# ---------------------------------------------------------------------------------------------
# The server
# ---------------------------------------------------------------------------------------------


class FakeAnthropic:
    """The fake Messages API server. Start with `start()` (or `with FakeAnthropic() as fake:`).

    Attributes:
        url: base URL to give the SDK (`http://127.0.0.1:<port>`).
        requests: every request received, in order.
        window: requests counted above this many tokens get "prompt is too long".
        caching: simulate prompt caching in the reported usage.
    """

    def __init__(self, *, window: int = DEFAULT_WINDOW, caching: bool = True,
                 min_compaction_trigger: int = fctx.MIN_COMPACTION_TRIGGER) -> None:
        self.window = window
        self.caching = caching
        self.min_compaction_trigger = min_compaction_trigger
        self.compaction_summary: Callable[[dict[str, Any]], str] = fctx.default_summary
        """What a compaction block says, from the request as the API reads it."""
        self.requests: list[RecordedRequest] = []
        self._responses: deque[dict[str, Any] | FakeAPIError] = deque()
        self._failures: deque[tuple[FakeAPIError, str]] = deque()
        self._policy: Policy | None = None
        self._previous_stream: list[str] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._counter = 0

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> FakeAnthropic:
        handler = _make_handler(self)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), name="fake-anthropic", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeAnthropic:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "FakeAnthropic is not started"
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- scripting ---------------------------------------------------------------------------

    def enqueue_response(self, response: dict[str, Any]) -> None:
        """Queue one response body (at least `content`; `stop_reason`, `usage` and `model` are
        filled in when missing; a given `usage` overrides the simulated one key by key)."""
        with self._lock:
            self._responses.append(response)

    def enqueue_text(self, text: str, *, stop_reason: str = "end_turn") -> None:
        self.enqueue_response(text_response(text, stop_reason=stop_reason))

    def enqueue_tool_use(self, name: str, input: dict[str, Any], *, id: str | None = None, text: str | None = None) -> None:
        self.enqueue_response(tool_use_response(name, input, id=id, text=text))

    def enqueue_error(self, status: int, message: str, *, type: str | None = None) -> None:
        """Queue an error answer in the response queue (after validation, unlike `fail_next`)."""
        with self._lock:
            self._responses.append(FakeAPIError(status, message, type=type))

    def set_policy(self, policy: Policy | None) -> None:
        """Answer with `policy(request_body)` when the response queue is empty."""
        self._policy = policy

    def fail_next(
        self,
        status: int,
        retry_after: float | None = None,
        times: int = 1,
        *,
        message: str | None = None,
        endpoint: str = "messages",
    ) -> None:
        """Answer the next `times` requests to `endpoint` ("messages", "count_tokens" or "any")
        with HTTP `status`, before any validation, with a `retry-after` header when given."""
        headers = {"retry-after": _fmt_seconds(retry_after)} if retry_after is not None else {}
        text = message or {429: "Number of request tokens has exceeded your rate limit", 529: "Overloaded"}.get(
            status, "Internal server error"
        )
        with self._lock:
            for _ in range(times):
                self._failures.append((FakeAPIError(status, text, headers=headers), endpoint))

    def count_tokens(self, body: dict[str, Any]) -> int:
        return fake_token_count(body)

    @property
    def message_requests(self) -> list[RecordedRequest]:
        """The recorded `POST /v1/messages` requests only."""
        return [r for r in self.requests if r.path == "/v1/messages"]

    # -- serving -----------------------------------------------------------------------------

    def _take_failure(self, endpoint: str) -> FakeAPIError | None:
        with self._lock:
            for i, (err, where) in enumerate(self._failures):
                if where in (endpoint, "any"):
                    del self._failures[i]
                    return err
        return None

    def handle(self, rec: RecordedRequest) -> tuple[int, dict[str, Any], dict[str, str]]:
        endpoint = {"/v1/messages": "messages", "/v1/messages/count_tokens": "count_tokens"}.get(rec.path)
        if endpoint is None:
            return _error(FakeAPIError(404, f"Not found: {rec.path}"))
        if "x-api-key" not in rec.headers and "authorization" not in rec.headers:
            return _error(FakeAPIError(401, "x-api-key header is required"))
        failure = self._take_failure(endpoint)
        if failure is not None:
            return _error(failure)
        body = rec.body
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return _error(FakeAPIError(400, "messages: at least one message is required"))
        problem = (validate_block_fields(messages) or validate_tool_pairing(messages)
                   or fctx.validate(body, fctx.betas_of(rec.headers, body), min_compaction_trigger=self.min_compaction_trigger))
        if problem:
            return _error(FakeAPIError(400, problem))
        managed = "context_management" in body
        view, applied = fctx.clear_tool_uses(fctx.from_compaction(body), fake_token_count)
        stream, before_last = request_token_stream(view)
        total = len(stream)
        if endpoint == "count_tokens":
            return 200, {"input_tokens": total}, {}
        if total > self.window:
            return _error(FakeAPIError(400, f"prompt is too long: {total} tokens > {self.window} maximum"))
        with self._lock:
            queued = self._responses.popleft() if self._responses else None
            previous, self._previous_stream = self._previous_stream, stream
            self._counter += 1
            n = self._counter
        try:
            if isinstance(queued, FakeAPIError):
                raise queued
            if queued is not None:
                answer = dict(queued)
            elif self._policy is not None:
                answer = dict(self._policy(fctx.as_text(view)))
            else:
                answer = text_response("ok")
        except FakeAPIError as err:
            return _error(err)
        cache_read = cache_creation = 0
        if self.caching:
            cache_read = _common_prefix(previous, stream)
            cache_creation = max(0, before_last - cache_read)
        usage = {
            "input_tokens": total - cache_read - cache_creation,
            "cache_creation_input_tokens": cache_creation,
            "cache_read_input_tokens": cache_read,
            "output_tokens": _output_tokens(answer.get("content", [])),
        }
        usage.update(answer.get("usage") or {})
        content = answer.get("content", [])
        trigger = fctx.compaction_trigger(view)
        if trigger is not None and total > trigger:
            block = {"type": "compaction", "content": self.compaction_summary(view)}
            content = [block, *content]
            after = fake_token_count({**view, "messages": [{"role": "user", "content": [block]}, view["messages"][-1]]})
            message_pass = {"type": "message", "input_tokens": after, "cache_creation_input_tokens": 0,
                            "cache_read_input_tokens": 0, "output_tokens": usage["output_tokens"]}
            usage.update({k: v for k, v in message_pass.items() if k != "type"})
            usage["iterations"] = [{"type": "compaction", "input_tokens": total, "cache_creation_input_tokens": 0,
                                    "cache_read_input_tokens": 0, "output_tokens": _output_tokens([block])},
                                   message_pass]
        has_tool_use = any(isinstance(b, dict) and b.get("type") == "tool_use" for b in content)
        out = {
            "id": answer.get("id", f"msg_fake_{n:06d}"),
            "type": "message",
            "role": "assistant",
            "content": content,
            "model": answer.get("model", body.get("model", DEFAULT_MODEL)),
            "stop_reason": answer.get("stop_reason", "tool_use" if has_tool_use else "end_turn"),
            "stop_sequence": answer.get("stop_sequence"),
            "usage": usage,
        }
        if managed:
            out["context_management"] = {"applied_edits": [applied] if applied else []}
        return 200, out, {}


def _fmt_seconds(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _common_prefix(a: list[str], b: list[str]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _error(err: FakeAPIError) -> tuple[int, dict[str, Any], dict[str, str]]:
    return err.status, {"type": "error", "error": {"type": err.type, "message": err.message}}, err.headers


def _make_handler(fake: FakeAnthropic) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet: tests read `requests`
            pass

        def do_POST(self) -> None:
            parts = urlsplit(self.path)
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {"_unparseable": raw.decode("utf-8", "replace")}
            rec = RecordedRequest(
                method="POST",
                path=parts.path,
                query=parts.query,
                headers={k.lower(): v for k, v in self.headers.items()},
                body=body if isinstance(body, dict) else {"_body": body},
                client_host=str(self.client_address[0]),
            )
            with fake._lock:
                fake.requests.append(rec)
            try:
                status, payload, headers = fake.handle(rec)
            except Exception as exc:  # a broken policy must show up as a 500, not a hung client
                status, payload, headers = _error(FakeAPIError(500, f"fake server error: {exc!r}"))
            rec.status, rec.response = status, payload
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.send_header("request-id", f"req_fake_{len(fake.requests):06d}")
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            data = b'{"type":"error","error":{"type":"not_found_error","message":"Not found"}}'
            self.send_response(404)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


def scripted_policy() -> Policy:
    """A policy that answers like longrun's offline `scripted` agent: lets a test run a whole
    review with model `anthropic:<id>` over real HTTP. Usage is still the fake's own."""
    from longrun.models.blocks import Message
    from longrun.models.provider import ModelRequest, ToolSpec
    from longrun.providers.scripted import ScriptedProvider

    agent = ScriptedProvider()

    def policy(body: dict[str, Any]) -> dict[str, Any]:
        system = body.get("system") or ""
        if isinstance(system, list):
            system = "\n".join(str(b.get("text", "")) for b in system if isinstance(b, dict))
        request = ModelRequest(
            model=str(body.get("model", DEFAULT_MODEL)),
            system=system,
            messages=[Message.from_wire(m) for m in body.get("messages", [])],
            tools=[ToolSpec(name=t["name"], description=t.get("description", ""), input_schema=t.get("input_schema", {}))
                   for t in body.get("tools") or []],
            max_tokens=int(body.get("max_tokens", 4096)),
        )
        response = agent.complete(request)
        return {"content": [b.model_dump(mode="json", exclude_none=True) for b in response.content],
                "stop_reason": response.stop_reason}

    return policy


__all__ = [
    "DEFAULT_WINDOW",
    "FakeAPIError",
    "FakeAnthropic",
    "RecordedRequest",
    "fake_token_count",
    "request_token_stream",
    "scripted_policy",
    "text_response",
    "tool_use_response",
    "validate_tool_pairing",
]
