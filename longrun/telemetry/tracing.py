"""Tracing on or off, from the standard `OTEL_*` environment variables, and Temporal's interceptor.

Off unless the environment asks for it: with none of `OTEL_EXPORTER_OTLP_ENDPOINT`,
`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_TRACES_EXPORTER` set (or `OTEL_SDK_DISABLED=true`),
no SDK is loaded, no exporter runs, no Temporal interceptor is added, and the spans of
`longrun.telemetry.spans` are a check of one module variable. On, an OTLP exporter (HTTP or gRPC
per `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL` / `OTEL_EXPORTER_OTLP_PROTOCOL`; the exporter itself reads
the endpoint, headers and timeout) behind a batch processor, and `TracingInterceptor` of
`temporalio.contrib.opentelemetry` (as `longrun.telemetry.interceptor.RunTracingInterceptor`,
without its per-activity `StartActivity` span) on every Temporal client longrun makes
(`longrun.client.connection.connect_temporal`) and on every worker (`build_worker`), so the
trace context travels client -> workflow -> activities and one run is one trace.

The tracer provider is longrun's own, not the process-global one: a host program's global
provider is left alone, and tests can turn tracing on and off around one test
(`configure_tracing(exporter=InMemorySpanExporter())`, then `.shutdown()`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from longrun.errors import ConfigError

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter
    from opentelemetry.trace import Tracer

TRACER_NAME = "longrun"
DEFAULT_SERVICE_NAME = "longrun"
CONTENT_VARIABLE = "LONGRUN_OTEL_CONTENT"
"""`1` adds redacted message content to model and tool spans (GenAI conventions' opt-in
attributes); off by default."""
EXPORT_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_EXPORTER")
Protocol = Literal["http/protobuf", "grpc"]
Exporter = Literal["otlp", "console"]


@dataclass(frozen=True)
class TracingConfig:
    """What the environment asks for: the exporter, the OTLP protocol, and whether spans may carry
    (redacted) content."""

    exporter: Exporter
    protocol: Protocol
    content: bool


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def content_requested(environ: Mapping[str, str] | None = None) -> bool:
    """Whether `LONGRUN_OTEL_CONTENT` opts in to message content on spans."""
    return _truthy((os.environ if environ is None else environ).get(CONTENT_VARIABLE))


def tracing_config(environ: Mapping[str, str] | None = None) -> TracingConfig | None:
    """The tracing the environment asks for; None when it asks for none.

    Raises:
        ConfigError: an exporter or protocol this worker cannot use (the message names the ones it can)."""
    env = os.environ if environ is None else environ
    if _truthy(env.get("OTEL_SDK_DISABLED")):
        return None
    names = [n.strip().lower() for n in env.get("OTEL_TRACES_EXPORTER", "").split(",") if n.strip()]
    endpoint = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    if not names:
        if not endpoint:
            return None
        names = ["otlp"]
    if names == ["none"]:
        return None
    if len(names) != 1 or names[0] not in ("otlp", "console"):
        raise ConfigError(f"OTEL_TRACES_EXPORTER={env.get('OTEL_TRACES_EXPORTER')!r}: longrun exports traces with "
                          "one of 'otlp', 'console' or 'none'")
    protocol = (env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or env.get("OTEL_EXPORTER_OTLP_PROTOCOL")
                or "http/protobuf").strip().lower()
    if protocol not in ("http/protobuf", "grpc"):
        raise ConfigError(f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol!r}: set it to 'http/protobuf' (the default) or 'grpc'")
    exporter: Exporter = "console" if names[0] == "console" else "otlp"
    return TracingConfig(exporter=exporter, protocol="grpc" if protocol == "grpc" else "http/protobuf",
                         content=content_requested(env))


class Tracing:
    """Tracing that is on: longrun's tracer provider, its tracer, and whether content is opted in."""

    def __init__(self, provider: TracerProvider, *, content: bool) -> None:
        self.provider = provider
        self.tracer: Tracer = provider.get_tracer(TRACER_NAME)
        self.content = content

    def flush(self, timeout_ms: int = 5_000) -> bool:
        """Export what is buffered (a CLI command ends with `os._exit`, which skips atexit)."""
        return bool(self.provider.force_flush(timeout_ms))

    def shutdown(self) -> None:
        """Flush, stop the exporter and turn tracing off in this process."""
        global _current
        with _lock:
            if _current is self:
                _current = None
        self.provider.shutdown()


_current: Tracing | None = None
_configured_from_env = False
_lock = threading.Lock()


def current() -> Tracing | None:
    """Tracing, when it is on in this process (None: off)."""
    return _current


def _exporter(config: TracingConfig) -> SpanExporter:
    if config.exporter == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter()
    if config.protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter

        return GrpcExporter()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

    return HttpExporter()


def configure_tracing(environ: Mapping[str, str] | None = None, *, exporter: SpanExporter | None = None,
                      content: bool | None = None, service_name: str | None = None,
                      batch: bool = False) -> Tracing | None:
    """Turn tracing on as the environment says (once per process; later calls return the same).

    Args:
        environ: the environment to read (default `os.environ`).
        exporter: export here instead, synchronously unless `batch` (tests: an in-memory
            exporter); tracing is then on whatever the environment says.
        content: opt in to redacted content (default: `LONGRUN_OTEL_CONTENT`).
        service_name: the `service.name` resource attribute (default `OTEL_SERVICE_NAME`, else "longrun").
        batch: `exporter` behind a batch processor, as the environment's exporter always is (the bench).

    Returns:
        The tracing now on, or None when it is off.

    Raises:
        ConfigError: the environment names an exporter or protocol longrun cannot use."""
    global _current, _configured_from_env
    with _lock:
        if _current is not None:
            return _current
        if exporter is None and _configured_from_env:
            return None
        config = tracing_config(environ) if exporter is None else None
        if exporter is None:
            _configured_from_env = True
            if config is None:
                return None
        from opentelemetry.sdk.resources import SERVICE_NAME, Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

        from longrun.telemetry.export import RedactingExporter

        env = os.environ if environ is None else environ
        name = service_name or env.get("OTEL_SERVICE_NAME") or DEFAULT_SERVICE_NAME
        provider = TracerProvider(resource=Resource.create({SERVICE_NAME: name}))
        if exporter is not None:
            processor = BatchSpanProcessor if batch else SimpleSpanProcessor
            provider.add_span_processor(processor(RedactingExporter(exporter)))
        else:
            assert config is not None
            provider.add_span_processor(BatchSpanProcessor(RedactingExporter(_exporter(config))))
        opted = content if content is not None else (config.content if config is not None else content_requested(env))
        _current = Tracing(provider, content=opted)
        return _current


def tracing_interceptors() -> list[Any]:
    """`[RunTracingInterceptor]` (Temporal's `TracingInterceptor`, cheaper per activity:
    `longrun.telemetry.interceptor`) for a Temporal client or worker when tracing is on, else `[]`."""
    tracing = configure_tracing()
    if tracing is None:
        return []
    from longrun.telemetry.interceptor import RunTracingInterceptor

    return [RunTracingInterceptor(tracing.tracer)]


def has_tracing_interceptor(interceptors: Any) -> bool:
    """Whether a client's interceptors already trace (a worker built on it then inherits them)."""
    from temporalio.contrib.opentelemetry import TracingInterceptor

    return any(isinstance(i, TracingInterceptor) for i in interceptors or ())


def flush_tracing() -> None:
    """Export what is buffered, when tracing is on (a no-op otherwise)."""
    tracing = _current
    if tracing is not None:
        tracing.flush()


__all__ = [
    "CONTENT_VARIABLE",
    "TRACER_NAME",
    "Tracing",
    "TracingConfig",
    "configure_tracing",
    "content_requested",
    "current",
    "flush_tracing",
    "has_tracing_interceptor",
    "tracing_config",
    "tracing_interceptors",
]
