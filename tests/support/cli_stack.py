"""A `longrun` CLI session against a real embedded stack, as a user has one: `longrun dev up` in
a temporary LONGRUN_HOME on free ports, a `longrun worker` subprocess, and the installed script
run as a subprocess for every command. Each pytest process (each xdist worker) gets one stack
for all the CLI tests it runs; alice is registered as an approver with a key in that home, the
way a person gets one (`longrun approvers add alice`).

One stack per process, not per module: starting one (`dev up`: PostgreSQL and the Temporal dev
server, then `approvers add`, a worker, and `dev down` at the end) took 70 to 115 s of a loaded
CI run's wall time, and twelve modules paid it. Tests sharing it keep to their own runs, task
queues and principals (each module names its own: eve, carol, gina, mallory, olga, vera, ...), as
people sharing a deployment do."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest

from longrun.service.devstack import free_port
from longrun.store import libpq_url, sqlalchemy_url

LONGRUN = str(Path(sys.executable).parent / "longrun")
SAMPLES = Path(__file__).resolve().parents[2] / "samples"
TEST_ARGV = [sys.executable, "-m", "unittest", "discover", "-s", "tests", "-q"]
OBJECTIVE = "The moving averages reported by the stats helper look wrong. Find the defect and propose a fix."
CLEARED = ("LONGRUN_DATABASE_URL", "TEMPORAL_ADDRESS", "LONGRUN_TASK_QUEUE", "LONGRUN_NAMESPACE", "LONGRUN_MODEL",
           "ANTHROPIC_API_KEY",  # the default model must be scripted here
           "LONGRUN_KEYS_DIR", "LONGRUN_OWNER_DATABASE_URL")  # keys go to this home, approvers to this stack


class Cli:
    """Runs `longrun ...` with this module's LONGRUN_HOME."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.env = {k: v for k, v in os.environ.items() if k not in CLEARED}
        self.env["LONGRUN_HOME"] = str(home)

    def __call__(self, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        """A generous timeout: a hang still fails, but a loaded CI machine (load 20 on 2 cores was
        seen) does not fail `start --wait` that would have finished."""
        done = subprocess.run([LONGRUN, *args], env=self.env, capture_output=True, text=True, timeout=timeout)
        assert "Traceback" not in done.stderr, done.stderr
        return done

    def json(self, *args: str) -> Any:
        done = self(*args, "--json")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    def start_and_wait(self, workspace: Path, *extra: str) -> tuple[str, dict]:
        """`start --wait`: returns once the run needs a human; then its status."""
        done = self(
            "start", "--objective", OBJECTIVE, "--workspace", str(workspace), "--approver", "alice",
            "--constraint", f"tests: {shlex.join(TEST_ARGV)}", "--allow-command", shlex.join(TEST_ARGV),
            "--wait", "--json", *extra,
        )
        assert done.returncode == 0, done.stderr
        first, last = (json.loads(line) for line in done.stdout.splitlines())
        assert last["run_id"] == first["run_id"]
        return first["run_id"], self.json("status", first["run_id"])


@contextmanager
def cli_stack() -> Iterator[Cli]:
    """An embedded stack, alice's key and a worker, in a fresh home; stopped on the way out. The
    home is not under pytest's basetemp: another pytest session resets that tree to mode 0700, and
    the embedded PostgreSQL runs as a system user who must traverse the path."""
    root = Path(tempfile.mkdtemp(prefix="longrun-cli-"))
    cli = Cli(root / "home")
    up = cli("dev", "up", "--port", str(free_port()), "--headless", "--json", timeout=120)
    assert up.returncode == 0, up.stderr
    added = cli("approvers", "add", "alice")  # the way a person gets a key: $LONGRUN_HOME/keys/alice.pem
    assert added.returncode == 0, added.stderr
    assert (cli.home / "keys" / "alice.pem").stat().st_mode & 0o777 == 0o600
    log = open(cli.home / "worker.log", "w")
    worker = subprocess.Popen([LONGRUN, "worker"], env=cli.env, stdout=log, stderr=subprocess.STDOUT)
    try:
        yield cli
    finally:
        worker.send_signal(signal.SIGINT)
        try:
            worker.wait(15)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait(5)
        log.close()
        down = cli("dev", "down", timeout=60)
        shutil.rmtree(root, ignore_errors=True)
        assert down.returncode == 0, down.stderr


@pytest.fixture(scope="session")
def cli() -> Iterator[Cli]:
    """One stack for every CLI test of this process. A module whose tests would change what
    others see (the sign-in floods of tests/test_console_abuse.py count against 127.0.0.1 in
    PostgreSQL for 5 minutes) defines a module-scoped `cli` of its own with `cli_stack()`."""
    with cli_stack() as cli:
        yield cli


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    target = tmp_path / "tiny"
    shutil.copytree(SAMPLES / "tiny", target)
    return target


def superuser(cli: Cli) -> psycopg.Connection:
    """A connection as the embedded server's superuser: what the database owner can do."""
    url = json.loads((cli.home / "stack.json").read_text())["database_url"]
    return psycopg.connect(libpq_url(sqlalchemy_url(url).set(username="postgres", password=None)), autocommit=True)


def audit_events(cli: Cli, run_id: str) -> list[dict]:
    """The run's audit events as `longrun audit --json` shows them, each with its actor."""
    return [r["data"]["event"] | {"actor": r["data"]["actor"]}
            for r in cli.json("audit", run_id)["timeline"] if r["source"] == "audit"]


def pending(cli: Cli, run_id: str) -> dict:
    """The approval the run waits for, as `longrun status --json` shows it (asserts it waits)."""
    status = cli.json("status", run_id)
    assert status["status"] == "waiting_approval", status
    return status["pending_approval"]


def refusals(cli: Cli, run_id: str) -> list[str]:
    """The reasons of the run's refused approvals, as `longrun audit --json` lists them."""
    return [r["data"]["event"]["reason"] for r in cli.json("audit", run_id)["timeline"] if r["kind"] == "approval_refused"]


def tamper(cli: Cli, table: str, statement: str) -> None:
    """Run `statement` as the embedded server's superuser with the append-only trigger off."""
    with superuser(cli) as conn:
        conn.execute(f"ALTER TABLE {table} DISABLE TRIGGER {table}_append_only")
        try:
            conn.execute(statement)
        finally:
            conn.execute(f"ALTER TABLE {table} ENABLE TRIGGER {table}_append_only")
