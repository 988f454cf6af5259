"""What tracing and metrics cost a run (issue 28: within 5% at N = 10), measured so that the
machine's load cannot pass for it.

The orchestration benchmark's shape (bench/orchestration.py: N concurrent runs, an instant model,
one instant read tool per turn, so a turn's time is all orchestration) in four settings:

- off: no tracing, no metrics (the default);
- tracing: longrun's tracer provider with the OTLP/HTTP exporter behind a batch processor, as
  `OTEL_EXPORTER_OTLP_ENDPOINT` sets it up, Temporal's `TracingInterceptor` on the client and the
  worker, longrun's model and tool spans; every span is exported to a receiver that decodes it;
- metrics: what `longrun worker --metrics-port` does (`serve_worker_metrics`: the worker's
  registry served over HTTP, the client on a Temporal runtime that serves the SDK's metrics on the
  next port), both endpoints scraped once every 10 model calls while the runs go;
- both.

Each setting runs N runs of a few turns on a worker built for it, in interleaved blocks whose order
turns around (off, tracing, metrics, both; then both, metrics, tracing, off; ...), so a drift in the
machine's load falls on every setting alike. Each setting is compared with "off" of its own block,
and the table gives the median of those paired ratios and their spread, for the per-turn p50 and
for this process's CPU per turn (the worker, the client and the exporter's thread; a clock that
load slows far less than the wall). The receiver and the scraper run in a process of their own
(bench/overhead_sidecar.py), so a collector's and Prometheus's work is not counted as the worker's.

    python -m bench.overhead                     # N = 10, 10 turns, 6 blocks; the tables on stdout
    python -m bench.overhead --sample DIR        # also write a scrape of the worker's and the console's metrics
    python -m bench.run --only overhead          # the same, as `make bench` runs it
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.orchestration import InstantProvider, _agent_runs, _instant_registry, _percentile, embedded_stack
from bench.report import Section, Table, mark, progress

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = ("off", "tracing", "metrics", "both")
N, TURNS, BLOCKS, WARMUP_TURNS = 10, 10, 6, 2
GOAL = 0.05
"""Issue 28: tracing and metrics may add at most 5% to the per-turn p50 at N = 10."""
SCRAPE_EVERY = 10
"""Model calls between scrapes of both endpoints while a round with metrics runs. By the work, not
the clock: on a loaded machine a turn takes many times longer, and scrapes by the clock would then
fall many times as often on each turn. Once every 10 turns is far more often than Prometheus's
usual 15 s asks of a worker, so this overstates the scrapes' share."""
POLL = 0.05
"""Seconds between looks at the model calls made, in every round alike."""


def schedule(blocks: int) -> list[tuple[str, ...]]:
    """The settings' order in each block: forward, backward, forward, ... (ABCD DCBA ABCD ...)."""
    return [SETTINGS if b % 2 == 0 else SETTINGS[::-1] for b in range(blocks)]


@dataclass
class Round:
    """One setting's N runs within one block."""

    setting: str
    overheads: list[float]
    cpu: float
    """Seconds of this process's CPU from creating the runs until their results (and, with
    tracing, until the batch processor has exported their spans)."""
    calls: int
    """Model calls the runs made: the turns, the final answer's included."""
    runs: int
    failed: int
    spans: int = 0
    scrapes: int = 0

    @property
    def p50(self) -> float:
        return _percentile(self.overheads, 0.5)

    @property
    def cpu_per_turn(self) -> float:
        return self.cpu / max(1, self.calls)


class Sidecar:
    """bench/overhead_sidecar.py in a process of its own: the OTLP receiver and the scraper."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "bench.overhead_sidecar"], cwd=ROOT, text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.otlp = str(self._answer()["otlp"])

    def _answer(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the bench's OTLP receiver and scraper ended (exit {self.proc.poll()}); see stderr")
        answer: dict[str, Any] = json.loads(line)
        if "error" in answer:
            raise RuntimeError(f"bench sidecar: {answer['error']}")
        return answer

    def tell(self, command: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()

    def ask(self, command: str) -> dict[str, Any]:
        self.tell(command)
        return self._answer()

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


@dataclass
class Stack:
    """What every round shares: the store, the model, two clients (the default Temporal runtime,
    and the one that serves the SDK's metrics), the worker metrics and the sidecar."""

    store: Any
    provider: InstantProvider
    workspace: Path
    clients: dict[str, Any]
    metrics: Any
    sidecar: Sidecar
    seen: dict[str, int] = field(default_factory=lambda: {"spans": 0, "scrapes": 0})

    def exported(self) -> tuple[int, int]:
        """Spans received and scrapes made since the last call."""
        now = self.sidecar.ask("count")
        if now["failures"]:
            raise RuntimeError(f"a scrape of the worker's metrics failed: {now['failures'][0]}")
        spans, scrapes = now["spans"] - self.seen["spans"], now["scrapes"] - self.seen["scrapes"]
        self.seen = {"spans": now["spans"], "scrapes": now["scrapes"]}
        return spans, scrapes


async def _round(stack: Stack, setting: str, n: int, turns: int) -> Round:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from temporalio.client import Client
    from temporalio.contrib.pydantic import pydantic_data_converter

    from longrun.service.settings import Settings
    from longrun.service.worker import build_worker
    from longrun.telemetry import configure_tracing, tracing_interceptors
    from longrun.workflows.agent_run import WORKFLOW_NAME

    tracing_on, metrics_on = setting in ("tracing", "both"), setting in ("metrics", "both")
    stack.exported()
    tracing = None
    if tracing_on:
        tracing = configure_tracing(exporter=OTLPSpanExporter(endpoint=f"{stack.sidecar.otlp}/v1/traces"), batch=True,
                                    service_name="bench-overhead")
    try:
        base = stack.clients["metrics" if metrics_on else "plain"]
        client = Client(base.service_client, namespace=base.namespace, data_converter=pydantic_data_converter,
                        interceptors=tracing_interceptors())
        queue = f"bench-overhead-{setting}-{uuid.uuid4().hex[:6]}"
        worker = build_worker(client, stack.store, settings=Settings.from_env(), registry=_instant_registry(),
                              provider_for=lambda _m: stack.provider, task_queue=queue, heartbeat_every=2.0,
                              metrics=stack.metrics if metrics_on else None)
        async with worker:
            done = asyncio.Event()
            cpu0 = time.process_time()
            scraping = asyncio.create_task(_scrape_by_calls(stack, metrics_on, done))
            try:
                got = await _agent_runs(client, stack.store, stack.provider, n, turns, stack.workspace, queue,
                                        WORKFLOW_NAME, history=False)
            finally:
                done.set()
                await scraping
            stack.sidecar.ask("drain")  # the scrapes asked for are served within the window
            if tracing is not None:
                tracing.flush()
            cpu = time.process_time() - cpu0
        executor = worker.config().get("activity_executor")
        if executor is not None:  # a worker per round: do not keep every round's idle threads
            executor.shutdown(wait=False)
    finally:
        if tracing is not None:
            tracing.shutdown()
    spans, scrapes = stack.exported()
    calls = sum(len(stack.provider.starts.get(r, [])) for r in got["ids"])
    return Round(setting, got["overheads"], cpu, calls, n, len(got["failed"]), spans, scrapes)


async def _scrape_by_calls(stack: Stack, metrics_on: bool, done: asyncio.Event) -> None:
    """Until `done`: with metrics on, a scrape of both endpoints each SCRAPE_EVERY model calls.
    Every round looks at the calls alike, so the looking costs every setting the same."""
    def calls() -> int:
        with stack.provider.lock:
            return sum(len(v) for v in stack.provider.starts.values())

    last = calls()
    while True:
        finished = done.is_set()
        now = calls()
        while now - last >= SCRAPE_EVERY:
            last += SCRAPE_EVERY
            if metrics_on:
                stack.sidecar.tell("tick")
        if finished:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(done.wait(), POLL)


def _serve_metrics() -> tuple[Any, Any, int]:
    """`serve_worker_metrics` on a free port whose next port is free too (a few tries)."""
    from longrun.errors import ConfigError
    from longrun.service.devstack import free_port
    from longrun.telemetry.serving import serve_worker_metrics

    for _ in range(5):
        port = free_port()
        try:
            metrics, runtime = serve_worker_metrics("127.0.0.1", port)
        except ConfigError:
            continue
        return metrics, runtime, port
    raise RuntimeError("no two free ports in a row for the worker's metrics")


async def _main(n: int, turns: int, blocks: int, warmup: bool, sample: Path | None) -> list[Round]:
    from temporalio.client import Client

    from longrun.telemetry import tracing_config

    if tracing_config() is not None:
        raise RuntimeError("the environment turns tracing on (OTEL_*), so the rounds without it would trace: unset "
                           "OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT and OTEL_TRACES_EXPORTER")
    workspace = Path(tempfile.mkdtemp(prefix="longrun-bench-ws-"))
    sidecar = Sidecar()
    rounds: list[Round] = []
    try:
        async with embedded_stack("overhead") as (env, store):
            target, namespace = env.client.service_client.config.target_host, env.client.namespace
            metrics, runtime, port = _serve_metrics()
            clients = {"plain": await Client.connect(target, namespace=namespace),
                       "metrics": await Client.connect(target, namespace=namespace, runtime=runtime)}
            sidecar.ask(f"urls http://127.0.0.1:{port}/metrics http://127.0.0.1:{port + 1}/metrics")
            stack = Stack(store, InstantProvider(turns), workspace, clients, metrics, sidecar)
            if warmup:  # first imports, the sandbox's first workflow, the runtimes' first connections
                stack.provider.turns = WARMUP_TURNS
                for setting in SETTINGS:
                    progress(f"overhead: warm-up, {setting}")
                    await _round(stack, setting, n, WARMUP_TURNS)
            stack.provider.turns = turns
            for b, order in enumerate(schedule(blocks)):
                for setting in order:
                    progress(f"overhead: block {b + 1}/{blocks}, {setting}, {n} runs x {turns} turns")
                    rounds.append(await _round(stack, setting, n, turns))
            if sample is not None:
                _write_sample(sample, metrics, store)
    finally:
        sidecar.close()
        shutil.rmtree(workspace, ignore_errors=True)
    return rounds


def _write_sample(sample: Path, metrics: Any, store: Any) -> None:
    from prometheus_client import generate_latest

    from longrun.telemetry.overview import console_registry

    sample.mkdir(parents=True, exist_ok=True)
    (sample / "worker.txt").write_bytes(generate_latest(metrics.registry))
    (sample / "console.txt").write_bytes(generate_latest(console_registry(store)))
    progress(f"overhead: wrote {sample}/worker.txt and console.txt")


def paired(rounds: list[Round], setting: str, of: str) -> list[float]:
    """Per block: `setting`'s figure (`of`: "p50" or "cpu_per_turn") over the same block's "off"."""
    offs = [r for r in rounds if r.setting == "off"]
    ons = [r for r in rounds if r.setting == setting]
    return [getattr(on, of) / getattr(off, of) for on, off in zip(ons, offs, strict=True) if getattr(off, of)]


def _median(ratios: list[float]) -> str:
    return f"{statistics.median(ratios):.3f}x" if ratios else "n/a"


def _spread(ratios: list[float]) -> str:
    return f"{min(ratios):.2f}-{max(ratios):.2f}x" if ratios else "n/a"


def tables(rounds: list[Round], n: int, turns: int, blocks: int) -> list[Table]:
    """The settings' table and the target's, from the rounds in the order they ran."""
    main = Table(f"Tracing and metrics, on and off: {n} concurrent runs of {turns} turns (instant model, one instant "
                 f"tool call per turn), {blocks} interleaved blocks of the four settings, same run",
                 ["setting", "runs completed", "turns measured", "per turn p50 / p95", "p50 vs off, median of blocks",
                  "p50 vs off, min-max", "worker CPU per turn", "CPU vs off, median of blocks", "CPU vs off, min-max",
                  "spans / scrapes"])
    target = Table(f"Target (issue 28): tracing and metrics within {GOAL:.0%} of off at N = {n}",
                   ["setting", "per turn p50 vs off", "worker CPU per turn vs off", f"within 5% at N = {n}",
                    "every block within 5%"])
    for setting in SETTINGS:
        mine = [r for r in rounds if r.setting == setting]
        overheads = [x for r in mine for x in r.overheads]
        runs, failed = sum(r.runs for r in mine), sum(r.failed for r in mine)
        cpu = sum(r.cpu for r in mine) / max(1, sum(r.calls for r in mine))
        p50s, cpus = paired(rounds, setting, "p50"), paired(rounds, setting, "cpu_per_turn")
        first = setting == "off"
        main.add(setting, f"{runs - failed}/{runs}", len(overheads),
                 f"{_percentile(overheads, 0.5) * 1000:.0f} / {_percentile(overheads, 0.95) * 1000:.0f} ms",
                 "1.000x" if first else _median(p50s), "" if first else _spread(p50s), f"{cpu * 1000:.1f} ms",
                 "1.000x" if first else _median(cpus), "" if first else _spread(cpus),
                 f"{sum(r.spans for r in mine)} / {sum(r.scrapes for r in mine)}")
        if not first and p50s:
            target.add(setting, _median(p50s), _median(cpus), mark(statistics.median(p50s) <= 1 + GOAL),
                       "yes" if max(p50s) <= 1 + GOAL else f"no ({sum(x > 1 + GOAL for x in p50s)} of {len(p50s)})")
    main.notes += [
        "A turn is one instant model call and one instant read tool; its time is the gap between the starts of "
        "consecutive model calls of one run, less the model's own time: all of it is orchestration, so this is the "
        "largest share tracing and metrics can take. A real model's seconds per call make it smaller.",
        "Each setting's rounds run on a worker built for that round; the order of the settings turns around from one "
        "block to the next. 'vs off' divides each block's figure by that block's off: the median says what tracing or "
        "metrics cost, the min-max how far one block alone can mislead.",
        "Worker CPU: this process's CPU clock (every thread: the worker's activities and workflows, the Temporal "
        "core's threads, the client starting the runs, the span exporter, the metrics endpoints) from creating the "
        "runs until their results, and with tracing until the spans are exported, over the model calls made. The "
        "receiver of the spans and the scraper run in another process and are not counted; neither are PostgreSQL "
        "and the Temporal server (tracing adds a header to their payloads).",
        f"Tracing exports every span (nothing sampled out) over OTLP/HTTP to a local receiver that decodes each "
        f"request; a remote collector adds network time to the exporter's thread, not to the turns. Metrics: both "
        f"endpoints are scraped once every {SCRAPE_EVERY} model calls (by the work, not the clock, so that load does "
        f"not change the scrapes per turn), far more often than Prometheus's usual 15 s would.",
    ]
    target.notes += [
        "Within 5%: the median over the blocks of the per-turn p50 with the setting over the same block's p50 "
        "without it. Every block within 5%: whether each block alone says so; when it does not, one on/off pair on "
        "this machine could have said the opposite, and only the median is the figure.",
        "What this cannot show: the cost at other N or with real model latency, a collector's or Prometheus's own "
        "cost, and, on a loaded machine, a difference smaller than the blocks' spread; the CPU ratio is the steadier "
        "of the two there.",
    ]
    return [main, target]


def run(n: int = N, turns: int = TURNS, blocks: int = BLOCKS, warmup: bool = True,
        sample: Path | None = None) -> Section:
    t0 = time.perf_counter()
    rounds = asyncio.run(_main(n, turns, blocks, warmup, sample))
    return Section("overhead", tables(rounds, n, turns, blocks), seconds=time.perf_counter() - t0,
                   reproduce="python -m bench.run --only overhead")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.overhead", description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=N, help=f"concurrent runs per round (default {N})")
    parser.add_argument("--turns", type=int, default=TURNS, help=f"turns per run (default {TURNS})")
    parser.add_argument("--blocks", type=int, default=BLOCKS, help=f"blocks of the four settings (default {BLOCKS})")
    parser.add_argument("--no-warmup", action="store_true", help="skip the uncounted warm-up round of each setting")
    parser.add_argument("--sample", type=Path, help="write a scrape of the worker's and the console's metrics here")
    args = parser.parse_args(argv)
    section = run(args.n, args.turns, args.blocks, not args.no_warmup, args.sample)
    for t in section.tables:
        print(t.text())
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
