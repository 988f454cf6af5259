"""What leaves the process: every span's strings redacted before any exporter sees them.

longrun's own spans redact their attributes when they set them (`longrun.telemetry.spans`), but
not every span is ours: Temporal's interceptor puts a failed activity's exception message into the
span's status, and a workflow span records the exception it failed with. A message may quote a
secret or a piece of a prompt, so this wrapper redacts every string of every span (attributes,
status, events and their attributes) and clips messages, whatever made the span.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.trace import Status

from longrun.redact import Redactor, default_redactor

if TYPE_CHECKING:
    from opentelemetry.util.types import Attributes

MAX_MESSAGE = 1_000
"""A status description or an exception message is clipped to this many characters."""
MAX_STACKTRACE = 4_000


def _value(value: Any, redactor: Redactor) -> Any:
    if isinstance(value, str):
        return redactor.redact(value)
    if isinstance(value, (list, tuple)):
        return [redactor.redact(v) if isinstance(v, str) else v for v in value]
    return value


def redacted_attributes(attributes: Attributes, redactor: Redactor) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in (attributes or {}).items():
        value = _value(value, redactor)
        if key == "exception.message" and isinstance(value, str):
            value = value[:MAX_MESSAGE]
        elif key == "exception.stacktrace" and isinstance(value, str):
            value = value[-MAX_STACKTRACE:]
        out[key] = value
    return out


def redacted_span(span: ReadableSpan, redactor: Redactor) -> ReadableSpan:
    """A copy of `span` with every string redacted (the ids, times and links as they were)."""
    status = span.status
    if status.description:
        status = Status(status.status_code, redactor.redact(status.description)[:MAX_MESSAGE])
    events = [Event(e.name, redacted_attributes(e.attributes, redactor), e.timestamp) for e in span.events]
    return ReadableSpan(
        name=redactor.redact(span.name), context=span.context, parent=span.parent, resource=span.resource,
        attributes=redacted_attributes(span.attributes, redactor), events=events, links=span.links,
        kind=span.kind, status=status, start_time=span.start_time, end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )


class RedactingExporter(SpanExporter):
    """Wraps an exporter: it receives the spans redacted (`redacted_span`)."""

    def __init__(self, inner: SpanExporter, redactor: Redactor | None = None) -> None:
        self.inner = inner
        self.redactor = redactor or default_redactor()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return self.inner.export([redacted_span(s, self.redactor) for s in spans])

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return bool(self.inner.force_flush(timeout_millis))


__all__ = ["RedactingExporter", "redacted_span"]
