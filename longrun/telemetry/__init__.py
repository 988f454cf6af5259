"""What longrun tells an operator about its runs: OpenTelemetry spans of a run (off unless `OTEL_*`
says where to send them), Prometheus metrics, and JSON log lines that name the run, turn,
activity and trace (docs/OBSERVABILITY.md).

- `tracing`: on or off from the environment, longrun's tracer provider, Temporal's interceptor
  (`interceptor`: without a span per scheduled activity).
- `spans`: the model call, tool call, compaction and approval spans inside activities.
- `export`: every span redacted before an exporter sees it.
- `logs`: `--log-format json`.
- `metrics`: the worker's counters and latency histograms; `serving`: `--metrics-port` (and the
  Temporal SDK's metrics on the port after it); `overview`: the console's `/metrics`, read from
  PostgreSQL at scrape time.

Tests: tests/test_telemetry_tracing.py, tests/test_telemetry_trace_crash.py, tests/test_telemetry_logs.py,
tests/test_metrics.py.
"""

from longrun.telemetry.logs import LogFormat, configure_logging
from longrun.telemetry.tracing import (
    CONTENT_VARIABLE,
    Tracing,
    TracingConfig,
    configure_tracing,
    flush_tracing,
    tracing_config,
    tracing_interceptors,
)

__all__ = [
    "CONTENT_VARIABLE",
    "LogFormat",
    "Tracing",
    "TracingConfig",
    "configure_logging",
    "configure_tracing",
    "flush_tracing",
    "tracing_config",
    "tracing_interceptors",
]
