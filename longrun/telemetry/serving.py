"""Serving a worker's metrics: longrun's on one port, the Temporal SDK's on the next.

Two endpoints, because the SDK's metrics come from its Rust core, which runs its own Prometheus
exporter (`temporalio.runtime.PrometheusConfig`) and cannot write into a Python registry. Putting
them on PORT+1 keeps one flag (`longrun worker --metrics-port PORT`) and two scrape targets.
"""

from __future__ import annotations

from prometheus_client import start_http_server
from temporalio.runtime import PrometheusConfig, Runtime, TelemetryConfig

from longrun.errors import ConfigError
from longrun.telemetry.metrics import WorkerMetrics


def serve_worker_metrics(host: str, port: int) -> tuple[WorkerMetrics, Runtime]:
    """Start serving a new `WorkerMetrics` at http://HOST:PORT/metrics and return it, with the
    Temporal runtime that serves the SDK's metrics at PORT+1 (connect the worker's client on it).

    Raises:
        ConfigError: the port is out of range, or either port is taken."""
    if not 0 < port < 65535:
        raise ConfigError(f"--metrics-port {port}: give a port from 1 to 65534 (the next one serves Temporal's metrics)")
    metrics = WorkerMetrics()
    try:
        start_http_server(port, addr=host, registry=metrics.registry)
    except OSError as exc:
        raise ConfigError(f"cannot serve metrics on {host}:{port} ({exc}): choose a free port with --metrics-port") from exc
    try:
        # counters named `_total` and durations in seconds: Prometheus conventions, as ours
        runtime = Runtime(telemetry=TelemetryConfig(metrics=PrometheusConfig(
            bind_address=f"{host}:{port + 1}", counters_total_suffix=True, durations_as_seconds=True)))
    except Exception as exc:  # the core reports a taken port as a plain RuntimeError
        raise ConfigError(f"cannot serve Temporal's metrics on {host}:{port + 1} ({exc}): choose a --metrics-port "
                          "whose next port is free too") from exc
    return metrics, runtime


__all__ = ["serve_worker_metrics"]
