"""`--log-format json`: one JSON object per log line, naming the run, turn, activity and trace.

A worker's log line is about a run; with text logs, which run is only in the message, if at all.
A JSON line carries, where known:

- `run_id` and `turn`: bound for each activity from its input (`log_context.LogContextInterceptor`,
  on every worker), or from Temporal's own `temporal_workflow` / `temporal_activity` extras;
- `activity`: the activity's type (`temporalio.activity.info()`);
- `trace_id` and `span_id`: the current span's, when tracing is on (`longrun.telemetry.tracing`).

The message and any exception text are redacted (`longrun.redact`) before they are written:
a log line never carries a secret the redactor knows the shape of. Text logs stay the default
and are not changed here.
"""

from __future__ import annotations

import contextvars
import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any, Literal, TextIO

from temporalio import activity

from longrun.redact import Redactor, default_redactor

LogFormat = Literal["text", "json"]
LOG_FORMATS: tuple[LogFormat, ...] = ("text", "json")

LOG_FIELDS: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar("longrun_log_fields", default=None)
"""What the current activity is about (run id, turn), set by `log_context.LogContextInterceptor`."""


def _trace_ids() -> tuple[str | None, str | None]:
    from opentelemetry import trace

    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return None, None
    return format(context.trace_id, "032x"), format(context.span_id, "016x")


class JsonFormatter(logging.Formatter):
    """A log record as one JSON line: time, level, logger, message, and what it is about."""

    def __init__(self, redactor: Redactor | None = None) -> None:
        super().__init__()
        self.redactor = redactor or default_redactor()

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": self.redactor.redact(record.getMessage()),
        }
        line.update(self._about(record))
        trace_id, span_id = _trace_ids()
        if trace_id is not None:
            line["trace_id"], line["span_id"] = trace_id, span_id
        if record.exc_info:
            line["error"] = self.redactor.redact(self.formatException(record.exc_info))
        return json.dumps(line, ensure_ascii=False, default=str)

    @staticmethod
    def _about(record: logging.LogRecord) -> dict[str, Any]:
        about: dict[str, Any] = {}
        for extra in ("temporal_workflow", "temporal_activity"):
            found = getattr(record, extra, None)
            if isinstance(found, dict) and found.get("workflow_id"):
                about["run_id"] = found["workflow_id"]
            if isinstance(found, dict) and found.get("activity_type"):
                about["activity"] = found["activity_type"]
        if activity.in_activity():
            info = activity.info()
            about.setdefault("activity", info.activity_type)
            about.setdefault("attempt", info.attempt)
            if info.workflow_id:
                about.setdefault("run_id", info.workflow_id)
        about.update({k: v for k, v in (LOG_FIELDS.get() or {}).items() if v is not None})
        return about


def configure_logging(log_format: LogFormat, *, level: int = logging.INFO, stream: TextIO | None = None) -> None:
    """JSON lines on stderr (or `stream`) at `level` for `json`; `text` leaves logging as it was.

    Raises:
        ValueError: a format other than text or json."""
    if log_format not in LOG_FORMATS:
        raise ValueError(f"log format {log_format!r}: use one of {', '.join(LOG_FORMATS)}")
    if log_format == "text":
        return
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)


__all__ = ["LOG_FIELDS", "LOG_FORMATS", "JsonFormatter", "LogFormat", "configure_logging"]
