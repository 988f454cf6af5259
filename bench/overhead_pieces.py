"""Where tracing's CPU goes in a turn: the thread CPU spent inside each piece of it, over one round
of bench/overhead.py's shape (N = 10 runs of 10 turns, after an uncounted warm-up), traced and not.

The whole-process CPU ratio of bench/overhead.py moves by 10% from round to round on a loaded
machine (the Temporal core's threads and the heartbeats follow the wall clock), so it cannot say
which part of a few milliseconds per turn is whose. This wraps the pieces (sync functions only, so
`time.thread_time` around a call is that call's own CPU; a piece called inside another of the same
name is counted once) and prints, per piece, the calls and the milliseconds per turn. The pieces
overlap (the sandbox's workflow span includes the host's; a tracer's `start_span` is in both), so
the figures are not to be added up. The wrapping costs a few microseconds a call itself.

    python -m bench.overhead_pieces                # off, then tracing
    python -m bench.overhead_pieces tracing,tracing
"""

from __future__ import annotations

import asyncio
import collections
import functools
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench import overhead as o
from bench.orchestration import InstantProvider, embedded_stack

_spent: collections.defaultdict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0])
_inside = threading.local()


def _wrap(owner: Any, attr: str, label: str) -> None:
    fn = getattr(owner, attr)

    @functools.wraps(fn)
    def timed(*args: Any, **kwargs: Any) -> Any:
        labels = _inside.__dict__.setdefault("labels", set())
        if label in labels:
            return fn(*args, **kwargs)
        labels.add(label)
        t0 = time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            _spent[label][0] += 1
            _spent[label][1] += time.thread_time() - t0
            labels.discard(label)

    setattr(owner, attr, timed)


def _install() -> None:
    import opentelemetry.exporter.otlp.proto.http.trace_exporter as otlp_http
    import temporalio.contrib.opentelemetry._interceptor as temporal
    from opentelemetry.sdk import trace as sdk
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    import longrun.telemetry.export as export
    import longrun.telemetry.spans as spans
    from longrun.redact import Redactor

    for owner, attr, label in [
        (Redactor, "redact", "Redactor.redact (the store's too)"),
        (spans, "text", "longrun spans: redaction when set"),
        (spans, "_attributes", "longrun spans: attributes"),
        (export, "redacted_span", "exporter: redaction"),
        (otlp_http.OTLPSpanExporter, "export", "OTLP export (encode + send)"),
        (otlp_http, "encode_spans", "OTLP encode"),
        (temporal.TracingWorkflowInboundInterceptor, "_completed_span", "workflow span (sandbox + host)"),
        (temporal.TracingInterceptor, "_context_from_headers", "activity: header decoded"),
        (sdk.Tracer, "start_span", "SDK: start_span"),
        (sdk._Span, "end", "SDK: end (the batch queue's too)"),
        (sdk._Span, "set_attributes", "SDK: set_attributes"),
        (BatchSpanProcessor, "on_end", "SDK: batch processor on_end"),
    ]:
        _wrap(owner, attr, label)


async def _main(settings: list[str], n: int, turns: int) -> None:
    from temporalio.client import Client

    workspace = Path(tempfile.mkdtemp(prefix="longrun-bench-ws-"))
    sidecar = o.Sidecar()
    try:
        async with embedded_stack("overhead-pieces") as (env, store):
            target, namespace = env.client.service_client.config.target_host, env.client.namespace
            metrics, runtime, port = o._serve_metrics()
            clients = {"plain": await Client.connect(target, namespace=namespace),
                       "metrics": await Client.connect(target, namespace=namespace, runtime=runtime)}
            sidecar.ask(f"urls http://127.0.0.1:{port}/metrics http://127.0.0.1:{port + 1}/metrics")
            stack = o.Stack(store, InstantProvider(o.WARMUP_TURNS), workspace, clients, metrics, sidecar)
            for setting in dict.fromkeys(settings):
                await o._round(stack, setting, n, o.WARMUP_TURNS)
            stack.provider.turns = turns
            _install()
            for setting in settings:
                _spent.clear()
                r = await o._round(stack, setting, n, turns)
                print(f"{setting}: process CPU {r.cpu_per_turn * 1000:.1f} ms per turn, {r.calls} model calls, "
                      f"{r.spans} spans")
                for label, (calls, spent) in sorted(_spent.items(), key=lambda kv: -kv[1][1]):
                    print(f"  {label:40s} {int(calls):6d} calls  {spent / r.calls * 1000:6.3f} ms per turn  "
                          f"{spent / max(calls, 1) * 1e6:7.1f} us per call")
    finally:
        sidecar.close()
        shutil.rmtree(workspace, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    settings = args[0].split(",") if args else ["off", "tracing"]
    asyncio.run(_main(settings, o.N, o.TURNS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
