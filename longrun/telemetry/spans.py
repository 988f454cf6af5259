"""longrun's own spans inside activities: the model call, a tool call, a compaction, a human's
decision on an approval. Each is a no-op (one module variable read) while tracing is off.

Attribute names follow the OpenTelemetry GenAI semantic conventions where they have one
(`gen_ai.*`, semconv v1.37: the inference span `chat {model}`, the tool span
`execute_tool {tool}`); the rest are `longrun.*`. The names are spelled here, not imported from
`opentelemetry.semconv._incubating` (a private module whose GenAI names are marked moved);
tests/test_telemetry_tracing.py checks them against it.

No content by default: no prompt, tool output or argument value; every string attribute that
could carry text is redacted (`longrun.redact`) and clipped, because a tool name, a model name, a
run id or an approver's name could. The values longrun makes itself from a closed set or a hash
(`GENERATED`: verdicts, rules, kinds, outcomes, triggers, action hashes, approval ids) are set as
they are; the exporter redacts every span's strings once more anyway (`longrun.telemetry.export`).
Redaction results are remembered (`TextMemo`): a run's spans repeat the same names and ids. With `LONGRUN_OTEL_CONTENT=1` the conventions' opt-in attributes
(`gen_ai.input.messages`, `gen_ai.output.messages`, `gen_ai.tool.call.arguments`,
`gen_ai.tool.call.result`) are added, redacted and clipped as well.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from temporalio import activity

from longrun.context.memo import TextMemo
from longrun.redact import Redactor, default_redactor
from longrun.telemetry.tracing import current

if TYPE_CHECKING:
    from opentelemetry.trace import Span

    from longrun.models.blocks import Message
    from longrun.models.context import CompactionReport
    from longrun.models.provider import Usage

# GenAI semantic conventions (v1.37)
OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
REQUEST_MODEL = "gen_ai.request.model"
REQUEST_MAX_TOKENS = "gen_ai.request.max_tokens"
RESPONSE_MODEL = "gen_ai.response.model"
FINISH_REASONS = "gen_ai.response.finish_reasons"
CONVERSATION_ID = "gen_ai.conversation.id"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
CACHE_CREATION_TOKENS = "gen_ai.usage.cache_creation.input_tokens"
CACHE_READ_TOKENS = "gen_ai.usage.cache_read.input_tokens"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
TOOL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_RESULT = "gen_ai.tool.call.result"
ERROR_TYPE = "error.type"

MAX_TEXT = 256
"""A plain string attribute (a name, a reason) is clipped to this many characters."""
MAX_CONTENT = 16_384
"""Opted-in content (messages, arguments, a tool's result) is clipped to this many characters."""

PROVIDER_NAMES = {"anthropic": "anthropic", "openai": "openai", "openai-compatible": "openai",
                  "bedrock": "aws.bedrock", "vertex": "gcp.vertex_ai"}
"""A model prefix's `gen_ai.provider.name` (the conventions' values; others keep their prefix)."""

GENERATED = frozenset({
    OPERATION, TOOL_TYPE, "longrun.tool.kind", "longrun.gate.verdict", "longrun.gate.rule", "longrun.action_hash",
    "longrun.effect.status", "longrun.tool.outcome", "longrun.compaction.trigger", "longrun.compaction.outcome",
    "longrun.compaction.stages", "longrun.approval.id", "longrun.approval.decision",
})
"""Attributes whose strings longrun makes itself, from a closed set or a hash: never text from a
user, a model or a tool, so they are set unredacted and unclipped (the exporter still looks)."""

_tool_span: contextvars.ContextVar[Span | None] = contextvars.ContextVar("longrun_tool_span", default=None)
_redacted: TextMemo[str] = TextMemo(lambda redactor, value: redactor.redact(value), 1 << 18)


def text(value: object, redactor: Redactor | None = None, limit: int = MAX_TEXT) -> str:
    """A string attribute: redacted, then clipped."""
    return _redacted(redactor or default_redactor(), str(value))[:limit]


def content_on() -> bool:
    """Whether spans may carry (redacted) content: tracing on and `LONGRUN_OTEL_CONTENT=1`."""
    tracing = current()
    return tracing is not None and tracing.content


def provider_name(model: str) -> str:
    prefix = model.split(":", 1)[0] if ":" in model else model
    return PROVIDER_NAMES.get(prefix, prefix)


def _attributes(attributes: Mapping[str, Any], redactor: Redactor | None = None) -> dict[str, Any]:
    """The attributes as a span gets them: None left out, text redacted and clipped."""
    out: dict[str, Any] = {}
    for key, value in attributes.items():
        if value is None:
            continue
        if key in GENERATED:
            pass
        elif isinstance(value, str):
            value = text(value, redactor)
        elif isinstance(value, (list, tuple)):
            value = [text(v, redactor) if isinstance(v, str) else v for v in value]
        out[key] = value
    return out


def _set(span: Span | None, attributes: Mapping[str, Any], redactor: Redactor | None = None) -> None:
    if span is not None:
        span.set_attributes(_attributes(attributes, redactor))  # one call: the SDK locks the span per call


@contextlib.contextmanager
def _span(name: str, attributes: Mapping[str, Any], *, client: bool = False,
          redactor: Redactor | None = None) -> Iterator[Span | None]:
    """A span under the current one (the activity's), or None while tracing is off. An exception
    marks it failed with its type only (`error.type`): a message may quote content."""
    tracing = current()
    if tracing is None:
        yield None
        return
    from opentelemetry.trace import SpanKind, Status, StatusCode

    start = _attributes(attributes, redactor)
    if activity.in_activity():  # a retry's span says which attempt it was
        start["longrun.activity.attempt"] = activity.info().attempt
    with tracing.tracer.start_as_current_span(
        text(name, redactor), kind=SpanKind.CLIENT if client else SpanKind.INTERNAL, attributes=start,
        record_exception=False, set_status_on_exception=False,
    ) as span:
        try:
            yield span
        except BaseException as exc:
            span.set_attribute(ERROR_TYPE, type(exc).__name__)
            span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
            raise


def model_span(run_id: str, turn: int, model: str,
               redactor: Redactor | None = None) -> contextlib.AbstractContextManager[Span | None]:
    """The inference span `chat {model}` around one provider call (rendering the request included)."""
    return _span(f"chat {model}", {
        OPERATION: "chat", PROVIDER: provider_name(model), REQUEST_MODEL: model,
        CONVERSATION_ID: run_id, "longrun.run_id": run_id, "longrun.turn": turn,
    }, client=True, redactor=redactor)


def record_response(span: Span | None, usage: Usage, stop_reason: str | None, response_model: str | None,
                    max_tokens: int, redactor: Redactor | None = None) -> None:
    """The response's usage and finish reason on the inference span."""
    _set(span, {
        REQUEST_MAX_TOKENS: max_tokens,
        RESPONSE_MODEL: response_model, FINISH_REASONS: [stop_reason] if stop_reason else None,
        INPUT_TOKENS: usage.input_tokens, OUTPUT_TOKENS: usage.output_tokens,
        CACHE_CREATION_TOKENS: usage.cache_creation_input_tokens, CACHE_READ_TOKENS: usage.cache_read_input_tokens,
    }, redactor)


def _parts(message: Message) -> list[dict[str, Any]]:
    """A message's content as the conventions' parts (text, tool_call, tool_call_response)."""
    parts: list[dict[str, Any]] = []
    for block in message.content:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append({"type": "text", "content": getattr(block, "text", "")})
        elif kind == "tool_use":
            parts.append({"type": "tool_call", "id": getattr(block, "id", ""), "name": getattr(block, "name", ""),
                          "arguments": getattr(block, "input", {})})
        elif kind == "tool_result":
            parts.append({"type": "tool_call_response", "id": getattr(block, "tool_use_id", ""),
                          "result": str(getattr(block, "content", ""))})
    return parts


def messages_json(messages: Sequence[Message], redactor: Redactor | None = None,
                  finish_reason: str | None = None) -> str:
    """Messages in the conventions' shape, as JSON: redacted, clipped to `MAX_CONTENT`."""
    shaped: list[dict[str, Any]] = []
    for m in messages:
        item: dict[str, Any] = {"role": m.role, "parts": _parts(m)}
        if finish_reason is not None:
            item["finish_reason"] = finish_reason
        shaped.append(item)
    raw = json.dumps(shaped, ensure_ascii=False, default=str)
    return (redactor or default_redactor()).redact(raw)[:MAX_CONTENT]


def record_content(span: Span | None, request_messages: Sequence[Message], response: Message | None,
                   finish_reason: str | None, redactor: Redactor | None = None) -> None:
    """Opt-in only (`LONGRUN_OTEL_CONTENT=1`): the request's messages and the model's answer."""
    if span is None or not content_on():
        return
    span.set_attribute(INPUT_MESSAGES, messages_json(request_messages, redactor))
    if response is not None:
        span.set_attribute(OUTPUT_MESSAGES, messages_json([response], redactor, finish_reason))


@contextlib.contextmanager
def tool_span(run_id: str, turn: int, call_id: str, tool: str,
              redactor: Redactor | None = None) -> Iterator[Span | None]:
    """The span `execute_tool {tool}` of one tool call. Re-entrant: the gate and the run called
    inside `tool_step` add to its span instead of opening their own."""
    open_span = _tool_span.get()
    if open_span is not None:
        yield open_span
        return
    with _span(f"execute_tool {tool}", {
        OPERATION: "execute_tool", TOOL_NAME: tool, TOOL_CALL_ID: call_id, TOOL_TYPE: "function",
        "longrun.run_id": run_id, "longrun.turn": turn,
    }, redactor=redactor) as span:
        token = _tool_span.set(span)
        try:
            yield span
        finally:
            _tool_span.reset(token)


def record_gate(span: Span | None, *, kind: str, verdict: str, rule: str, action_hash: str, action_id: str,
                redactor: Redactor | None = None) -> None:
    """The gate's verdict on a tool call: the tool's kind, the verdict and its rule, the action hash."""
    _set(span, {"longrun.tool.kind": kind, "longrun.gate.verdict": verdict, "longrun.gate.rule": rule,
                "longrun.action_hash": action_hash or None, "longrun.action_id": action_id}, redactor)


def record_tool_run(span: Span | None, *, kind: str, is_error: bool, effect_status: str | None,
                    outcome: str = "ran", arguments: Mapping[str, Any] | None = None, result: str | None = None,
                    redactor: Redactor | None = None) -> None:
    """How the call ran; the arguments and the result only when content is opted in."""
    _set(span, {"longrun.tool.kind": kind, "longrun.tool.is_error": is_error,
                "longrun.effect.status": effect_status, "longrun.tool.outcome": outcome}, redactor)
    if span is None or not content_on():
        return
    r = redactor or default_redactor()
    if arguments is not None:
        span.set_attribute(TOOL_ARGUMENTS, r.redact(json.dumps(dict(arguments), ensure_ascii=False, default=str))[:MAX_CONTENT])
    if result is not None:
        span.set_attribute(TOOL_RESULT, r.redact(result)[:MAX_CONTENT])


def compaction_span(run_id: str, turn: int, trigger: str) -> contextlib.AbstractContextManager[Span | None]:
    return _span("compact", {"longrun.run_id": run_id, "longrun.turn": turn, "longrun.compaction.trigger": trigger})


def record_compaction(span: Span | None, outcome: str, report: CompactionReport | None) -> None:
    """Trigger, tokens before and after (calibrated), facts left out, the outcome."""
    attributes: dict[str, Any] = {"longrun.compaction.outcome": outcome}
    if report is not None:
        attributes.update({
            "longrun.compaction.tokens_before": report.tokens_before_calibrated,
            "longrun.compaction.tokens_after": report.tokens_after_calibrated,
            "longrun.compaction.facts_left_out": report.ledger_left_out,
            "longrun.compaction.messages_summarized": report.messages_summarized,
            "longrun.compaction.stages": list(report.stages_run),
        })
    _set(span, attributes)


def approval_span(run_id: str, approval_id: str, approver: str, decision: str, requested_at: datetime | None,
                  decided_at: datetime, redactor: Redactor | None = None) -> contextlib.AbstractContextManager[Span | None]:
    """A human's decision on an approval: who, and how long the request waited for it (seconds
    from the request to the decision, both from the workflow's clock; absent for requests made
    before the workflow passed the request time)."""
    wait = (decided_at - requested_at).total_seconds() if requested_at is not None else None
    return _span(f"approval {decision}", {
        "longrun.run_id": run_id, "longrun.approval.id": approval_id, "longrun.approval.approver": approver,
        "longrun.approval.decision": decision, "longrun.approval.wait_seconds": wait,
    }, redactor=redactor)


__all__ = [
    "GENERATED",
    "approval_span",
    "compaction_span",
    "content_on",
    "messages_json",
    "model_span",
    "provider_name",
    "record_compaction",
    "record_content",
    "record_gate",
    "record_response",
    "record_tool_run",
    "text",
    "tool_span",
]
