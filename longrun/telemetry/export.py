"""What leaves the process: every span's strings redacted before any exporter sees it.

longrun's own spans redact their attributes when they set them (`longrun.telemetry.spans`), but
not every span is ours: Temporal's interceptor puts a failed activity's exception message into the
span's status, and a workflow span records the exception it failed with. A message may quote a
secret or a piece of a prompt, so this wrapper redacts every string of every span (attributes,
status, events and their attributes) and clips messages, whatever made the span.

Cheaply: most of those strings come back span after span (a run's workflow and run ids, the
activities' names, a model's name, the enums), so the results are remembered (`TextMemo`, bounded
by the characters it holds), and a span none of whose strings changed is passed on as it is
rather than copied. Redaction was about a quarter of what tracing cost a turn before
(bench/overhead.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.trace import Status

from longrun.context.memo import TextMemo
from longrun.redact import Redactor, default_redactor

if TYPE_CHECKING:
    from collections.abc import Callable

    from opentelemetry.util.types import Attributes

MAX_MESSAGE = 1_000
"""A status description or an exception message is clipped to this many characters."""
MAX_STACKTRACE = 4_000
MEMO_CHARS = 1 << 18
"""Characters of span strings whose redaction a process remembers (strings over a sixteenth of
this are redacted every time)."""


def memo_redact(redactor: Redactor) -> Callable[[str], str]:
    """`redactor.redact`, remembered for the strings spans repeat."""
    return TextMemo(redactor.redact, MEMO_CHARS)


def _value(value: Any, redact: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, (list, tuple)) and any(isinstance(v, str) for v in value):
        return [redact(v) if isinstance(v, str) else v for v in value]
    return value


def redacted_attributes(attributes: Attributes, redact: Callable[[str], str]) -> dict[str, Any] | None:
    """The attributes with every string redacted (messages clipped); None when none changed."""
    out: dict[str, Any] = {}
    changed = False
    for key, value in (attributes or {}).items():
        new = _value(value, redact)
        if key == "exception.message" and isinstance(new, str):
            new = new[:MAX_MESSAGE]
        elif key == "exception.stacktrace" and isinstance(new, str):
            new = new[-MAX_STACKTRACE:]
        changed = changed or (new is not value and new != value)
        out[key] = new
    return out if changed else None


def redacted_span(span: ReadableSpan, redact: Callable[[str], str]) -> ReadableSpan:
    """`span` with every string redacted: the span itself when nothing changed, else a copy (the
    ids, times and links as they were)."""
    status = span.status
    if status.description:
        status = Status(status.status_code, redact(status.description)[:MAX_MESSAGE])
    events = []
    for e in span.events:
        event_attributes = redacted_attributes(e.attributes, redact)
        events.append(e if event_attributes is None else Event(e.name, event_attributes, e.timestamp))
    name = redact(span.name)
    attributes = redacted_attributes(span.attributes, redact)
    if (attributes is None and name == span.name and status.description == span.status.description
            and all(a is b for a, b in zip(events, span.events, strict=True))):
        return span
    return ReadableSpan(
        name=name, context=span.context, parent=span.parent, resource=span.resource,
        attributes=dict(span.attributes or {}) if attributes is None else attributes, events=events,
        links=span.links, kind=span.kind, status=status, start_time=span.start_time, end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )


class RedactingExporter(SpanExporter):
    """Wraps an exporter: it receives the spans redacted (`redacted_span`)."""

    def __init__(self, inner: SpanExporter, redactor: Redactor | None = None) -> None:
        self.inner = inner
        self.redactor = redactor or default_redactor()
        self._redact = memo_redact(self.redactor)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return self.inner.export([redacted_span(s, self._redact) for s in spans])

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return bool(self.inner.force_flush(timeout_millis))


__all__ = ["MAX_MESSAGE", "RedactingExporter", "memo_redact", "redacted_span"]
