"""The console under load (issue 16): 200 browsers following one live run over server-sent events
while programs send 50 API requests a second, for 30 seconds, beside the worker running that run.

Everything is real and in its own process, as deployed: the embedded stack (`longrun dev up`: a
PostgreSQL server and the Temporal dev server), a worker (`bench.console_worker`, a paced model
so the run writes audit events the whole time), and `longrun serve`. This process is the load:
one signed-in session, 200 SSE streams from event 0, and an open-loop generator that starts a
request every 20 ms whether or not the last one answered (so a slow console cannot lower the
offered load), rotating over the run's detail, its timeline's newest page, the run list and the
approvals inbox. The SSE streams are read off their sockets by hand (`_sse`): an HTTP client
library parsing 200 streams cost this process more CPU than the console spent serving them.

Measured: API latency (p50, p95, max) and errors; SSE delivery latency of each live event (from
the moment its audit row was written to the moment a client parsed it); dropped events: for
each client, every event written up to two seconds before the end that it did not receive; and
duplicates. Targets: 0 dropped, API p95 under 200 ms. The load generator shares the machine's
cores with everything it measures, so the figures are an upper bound on the console's own cost.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.report import Section, Table, mark, progress

SSE_CLIENTS, API_RPS, SECONDS, PACE = 200, 50, 30.0, 0.1
FLOOD_CONCURRENCY, FLOOD_ADDRESSES, FLOOD_SECONDS = 32, 8, 15.0
LONGRUN = str(Path(sys.executable).parent / "longrun")
PASSWORD = "bench-console-password"


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))]


def _ms(v: float) -> str:
    return f"{v * 1000:.0f} ms"


def _cli(env: dict[str, str], *args: str, stdin: str | None = None) -> str:
    done = subprocess.run([LONGRUN, *args], env=env, input=stdin, capture_output=True, text=True, timeout=180)
    if done.returncode != 0:
        raise RuntimeError(f"longrun {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


async def _sse(port: int, path: str, cookie: str, got: list[tuple[int, float, str]], opened: asyncio.Event) -> None:
    """One browser's event stream, read off the socket by hand: an HTTP client library parsing
    200 streams in this process would cost more CPU than the console serving them, and the load
    generator must not be what is measured."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=2**22)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nCookie: longrun_session={cookie}\r\n"
                 "Accept: text/event-stream\r\n\r\n".encode())
    await writer.drain()
    try:
        status = await reader.readline()
        if b" 200 " not in status:
            raise RuntimeError(f"event stream refused: {status!r}")
        while (line := await reader.readline()) not in (b"\r\n", b""):
            pass
        opened.set()
        buf = b""
        while True:
            size = int((await reader.readline()).strip() or b"0", 16)
            if size == 0:
                break
            chunk = await reader.readexactly(size + 2)
            now = time.time()
            buf += chunk[:-2].replace(b"\r\n", b"\n")
            *frames, buf = buf.split(b"\n\n")
            for frame in frames:
                for line in frame.split(b"\n"):
                    if line.startswith(b"data: {\"seq\""):
                        item = json.loads(line[6:])
                        got.append((int(item["seq"]), now, item["at"]))
    finally:
        writer.close()


async def _request(http: Any, path: str, out: list[tuple[float, int]], by_path: dict[str, list[float]]) -> None:
    t0 = time.perf_counter()
    try:
        status = (await http.get(path)).status_code
    except Exception:
        status = 0
    out.append((time.perf_counter() - t0, status))
    by_path.setdefault(path.split("?")[0].rsplit("/", 1)[-1], []).append(time.perf_counter() - t0)


async def _load(url: str, run_id: str, clients: int, rps: int, seconds: float) -> dict[str, Any]:
    import httpx

    port = int(url.rsplit(":", 1)[1])
    async with httpx.AsyncClient(base_url=url, timeout=30, limits=httpx.Limits(max_connections=200)) as api:
        r = await api.post("/api/session", json={"name": "bench", "password": PASSWORD})
        r.raise_for_status()
        cookie = str(api.cookies.get("longrun_session"))
        streams: list[list[tuple[int, float, str]]] = [[] for _ in range(clients)]
        opened = [asyncio.Event() for _ in range(clients)]
        started = time.time()
        tasks = [asyncio.create_task(_sse(port, f"/api/runs/{run_id}/events?after=0", cookie, streams[i], opened[i]))
                 for i in range(clients)]
        await asyncio.wait_for(asyncio.gather(*(o.wait() for o in opened)), 60)
        connected = time.time()
        paths = [f"/api/runs/{run_id}", f"/api/runs/{run_id}/timeline?limit=50", "/api/runs?limit=20", "/api/approvals"]
        answers: list[tuple[float, int]] = []
        by_path: dict[str, list[float]] = {}
        pending: list[asyncio.Task[None]] = []
        t0 = time.perf_counter()
        i = 0
        while time.perf_counter() - t0 < seconds:
            pending.append(asyncio.create_task(_request(api, paths[i % len(paths)], answers, by_path)))
            i += 1
            await asyncio.sleep(max(0.0, t0 + i / rps - time.perf_counter()))
        await asyncio.gather(*pending)
        ended = time.time()
        progress("p50 by endpoint: " + ", ".join(f"{k} {_ms(_percentile(v, 0.5))}" for k, v in by_path.items()))
        await asyncio.sleep(2.0)  # let the last events arrive
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    parsed = [[(seq, recv, datetime.fromisoformat(at).timestamp()) for seq, recv, at in got] for got in streams]
    return {"streams": parsed, "answers": answers, "started": started, "connected": connected, "ended": ended,
            "offered": i, "elapsed": time.perf_counter() - t0}


async def _flood(url: str, seconds: float = FLOOD_SECONDS) -> dict[str, Any]:
    """/api/me's latency, alone and then under a flood of sign-ins with made-up names from
    `FLOOD_ADDRESSES` loopback addresses (`FLOOD_CONCURRENCY` at once). Before issue 24 each such
    sign-in ran scrypt in the threads that serve reads, and /api/me went from 3 ms to 943 ms; now
    derivations have a pool of their own and the throttle answers most of the flood 429."""
    import httpx

    async def me_latency(http: Any, until: float) -> list[float]:
        out = []
        while time.perf_counter() < until:
            t0 = time.perf_counter()
            r = await http.get("/api/me")
            if r.status_code == 200:
                out.append(time.perf_counter() - t0)
            await asyncio.sleep(0.05)
        return out

    statuses: dict[int, int] = {}

    async def attacker(address: str, until: float, n: int) -> None:
        transport = httpx.AsyncHTTPTransport(local_address=address)
        async with httpx.AsyncClient(base_url=url, timeout=30, transport=transport) as http:
            i = 0
            while time.perf_counter() < until:
                r = await http.post("/api/session", json={"name": f"nobody{n}x{i}", "password": "made-up-password"})
                statuses[r.status_code] = statuses.get(r.status_code, 0) + 1
                i += 1

    async with httpx.AsyncClient(base_url=url, timeout=30) as http:
        (await http.post("/api/session", json={"name": "bench", "password": PASSWORD})).raise_for_status()
        alone = await me_latency(http, time.perf_counter() + 5.0)
        until = time.perf_counter() + seconds
        flood = [asyncio.create_task(attacker(f"127.0.0.{20 + n % FLOOD_ADDRESSES}", until, n))
                 for n in range(FLOOD_CONCURRENCY)]
        during = await me_latency(http, until)
        await asyncio.gather(*flood)
    return {"alone": alone, "during": during, "statuses": statuses}


async def _measure(home: Path, env: dict[str, str]) -> dict[str, Any]:
    from longrun.client import calls as client_calls
    from longrun.client import runs as client_runs
    from longrun.client.connection import connect_temporal
    from longrun.models.spec import RunCaps, RunSpec
    from longrun.service.devstack import free_port
    from longrun.service.settings import Settings
    from longrun.store import Store

    stack = json.loads((home / "stack.json").read_text())
    queue = "bench-console"
    worker = subprocess.Popen([sys.executable, "-m", "bench.console_worker", stack["database_url"],
                               stack["temporal_address"], queue, str(PACE)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    port = free_port()
    console = subprocess.Popen([LONGRUN, "serve", "--port", str(port)], env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.STDOUT)
    try:
        assert worker.stdout is not None
        worker.stdout.readline()
        workspace = home / "ws"
        workspace.mkdir()
        (workspace / "README.md").write_text("A sample project for the console load benchmark.\n" * 20)
        settings = Settings(home=home, database_url=stack["database_url"], temporal_address=stack["temporal_address"])
        store = Store.from_url(stack["database_url"])
        client = await connect_temporal(settings.temporal_address, settings.namespace)
        spec = RunSpec(objective="Read the project and keep notes (console load benchmark).", workspace=str(workspace),
                       caps=RunCaps(max_turns=1000, max_model_calls=1000, max_tool_calls=2000))
        run_id = await client_runs.start_run(client, store, spec, task_queue=queue)
        url = f"http://127.0.0.1:{port}"
        import httpx

        for _ in range(150):
            try:
                if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.2)
        await asyncio.sleep(3.0)  # the run is well under way
        progress(f"console: {SSE_CLIENTS} SSE clients + {API_RPS} requests/s for {SECONDS:.0f} s on {run_id}")
        result = await _load(url, run_id, SSE_CLIENTS, API_RPS, SECONDS)
        progress(f"console: /api/me during {FLOOD_CONCURRENCY} concurrent made-up sign-ins for {FLOOD_SECONDS:.0f} s")
        result["flood"] = await _flood(url)
        records = store.audit(run_id)
        result["written"] = [(r.seq, r.created_at.timestamp()) for r in records]
        result["turns"] = sum(1 for r in records if r.kind == "model_called"
                              and result["connected"] <= r.created_at.timestamp() <= result["ended"])
        await client_calls.control(client, run_id, "cancel")
        store.close()
        return result
    finally:
        for p in (console, worker):
            p.terminate()
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()


def run() -> Section:
    t0 = time.perf_counter()
    home = Path(tempfile.mkdtemp(prefix="longrun-bench-console-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LONGRUN_", "TEMPORAL_"))}
    env["LONGRUN_HOME"] = str(home)
    from longrun.service.devstack import free_port

    try:
        _cli(env, "dev", "up", "--port", str(free_port()), "--headless")
        _cli(env, "approvers", "add", "bench", "--console", "--password-stdin", "--role", "viewer", stdin=PASSWORD + "\n")
        result = asyncio.run(_measure(home, env))
    finally:
        subprocess.run([LONGRUN, "dev", "down"], env=env, capture_output=True, timeout=120)
        shutil.rmtree(home, ignore_errors=True)
    return Section("console", [_table(result)], seconds=time.perf_counter() - t0,
                   reproduce="python -m bench.run --only console")


def _table(r: dict[str, Any]) -> Table:
    answers = r["answers"]
    latency = [t for t, s in answers if s == 200]
    errors = sum(1 for _, s in answers if s != 200)
    cutoff = r["ended"] - 2.0
    expected = {seq for seq, at in r["written"] if at <= cutoff}
    dropped = duplicates = 0
    delivery: list[float] = []
    for got in r["streams"]:
        seqs = [seq for seq, _, _ in got]
        duplicates += len(seqs) - len(set(seqs))
        dropped += len(expected - set(seqs))
        delivery += [recv - at for seq, recv, at in got if at >= r["connected"]]
    live = len({seq for seq, at in r["written"] if r["connected"] <= at <= r["ended"]})
    p95 = _percentile(latency, 0.95)
    t = Table(f"Console under load: {SSE_CLIENTS} SSE clients on one live run + {API_RPS} API requests/s, "
              f"{SECONDS:.0f} s", ["measure", "value", "target"])
    t.add("API requests answered", f"{len(answers)} of {r['offered']} offered ({len(answers) / r['elapsed']:.1f}/s), "
          f"{errors} errors", f"{API_RPS}/s, 0 errors")
    t.add("API latency p50 / p95 / max",
          f"{_ms(_percentile(latency, 0.5))} / {_ms(p95)} / {_ms(max(latency, default=float('nan')))}",
          f"p95 < 200 ms: {mark(p95 < 0.2)}")
    t.add("SSE clients (each from event 0)", f"{len(r['streams'])}, {live} live events each during the window", "")
    t.add("SSE delivery latency p50 / p95 (live events)",
          f"{_ms(_percentile(delivery, 0.5))} / {_ms(_percentile(delivery, 0.95))}", "")
    t.add("dropped events (all clients)", f"{dropped} of {len(expected) * len(r['streams'])}",
          f"0: {mark(dropped == 0)}")
    t.add("duplicate events (all clients)", str(duplicates), "0")
    t.add("run turns during the window", str(r["turns"]), "")
    flood = r["flood"]
    under = _percentile(flood["during"], 0.95)
    t.add("/api/me p50 / p95 alone",
          f"{_ms(_percentile(flood['alone'], 0.5))} / {_ms(_percentile(flood['alone'], 0.95))}", "")
    t.add(f"/api/me p50 / p95 during a sign-in flood ({FLOOD_CONCURRENCY} at once, made-up names, "
          f"{FLOOD_ADDRESSES} addresses)", f"{_ms(_percentile(flood['during'], 0.5))} / {_ms(under)}",
          f"p95 < 200 ms: {mark(under < 0.2)}")
    t.add("flood sign-ins answered", ", ".join(f"{n} x {s}" for s, n in sorted(flood["statuses"].items())),
          "429 once the limits are reached")
    t.notes = [
        "Real processes: embedded PostgreSQL, the Temporal dev server, a worker running the run (a paced stand-in model, "
        f"{PACE:.1f} s per call), `longrun serve`, and this load generator, all on this machine's cores.",
        "Delivery latency runs from the audit row's write time to the client parsing the event; it includes the feed's "
        "poll interval (250 ms), so its floor is about half of that.",
        "Dropped: per client, every event written up to 2 s before the end that it did not receive.",
        "The sign-in flood runs after the SSE load, with the run still going; a 401 ran the password's key derivation "
        "(scrypt, in the console's own small pool), a 429 was refused by the throttle before it.",
        "What it cannot show: many runs watched at once (one poller per run), several console processes, a real "
        "network between browser and console, or a model's real pace (a run writes events faster here than most do).",
    ]
    return t


if __name__ == "__main__":
    # experiments: python -m bench.console_load [SSE_CLIENTS API_RPS SECONDS]
    if len(sys.argv) > 3:
        SSE_CLIENTS, API_RPS, SECONDS = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    section = run()
    for table in section.tables:
        print(table.text())
