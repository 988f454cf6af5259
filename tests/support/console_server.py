"""`longrun serve` as a user runs it, for the console tests: the installed script in its own
process, on a free port, against the module's dev stack (`tests.support.cli_stack`), with people
given console passwords the way an administrator does (`longrun approvers add NAME --console
--password-stdin`).

One console per test process (the `console` fixture), as the `cli` stack is one per process:
`longrun serve` and the three `approvers add --console` (each sealing a key under a password with
scrypt) were started again by each of six console modules, tens of seconds each on a loaded
machine. Nothing a test sees lives in the console process: sessions, keys and sign-in counts are
in the stack's PostgreSQL, which those modules shared already. A test that changes a console
user's password uses a principal of its own. tests/test_console_abuse.py keeps its own stack and
console (its floods are counted per address and over the whole console)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import httpx
import pytest

from longrun.service.devstack import free_port
from tests.support.cli_stack import LONGRUN, Cli

PASSWORDS = {"alice": "alice-console-pw-1", "vera": "vera-viewer-pw-22", "otto": "otto-operator-pw-3"}
ROLES = {"alice": ["viewer", "approver"], "vera": ["viewer"], "otto": ["viewer", "operator"]}


def add_console_users(cli: Cli) -> None:
    for name, password in PASSWORDS.items():
        roles = [a for r in ROLES[name] for a in ("--role", r)]
        done = subprocess.run([LONGRUN, "approvers", "add", name, "--console", "--password-stdin", *roles],
                              input=password + "\n", env=cli.env, capture_output=True, text=True, timeout=180)
        assert done.returncode == 0, done.stderr
        assert password not in done.stdout + done.stderr


@dataclass
class Console:
    url: str
    process: subprocess.Popen[bytes]
    clients: list[httpx.Client] = field(default_factory=list)

    def client(self, **kwargs: object) -> httpx.Client:
        """An HTTP client of this console, closed when the console stops."""
        client = httpx.Client(base_url=self.url, timeout=30, **kwargs)  # type: ignore[arg-type]
        self.clients.append(client)
        return client

    def session(self, name: str, password: str | None = None) -> httpx.Client:
        """A signed-in HTTP client with the CSRF header set, as the pages' script sends it."""
        client = self.client()
        r = client.post("/api/session", json={"name": name, "password": password or PASSWORDS[name]})
        assert r.status_code == 200, r.text
        client.headers["X-CSRF-Token"] = r.json()["csrf_token"]
        return client


@contextmanager
def serve(cli: Cli) -> Iterator[Console]:
    port = free_port()
    log = open(cli.home / f"console-{port}.log", "wb")
    proc = subprocess.Popen([LONGRUN, "serve", "--port", str(port)], env=cli.env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120  # imports alone can take 30 s on a loaded machine
        while True:
            try:
                if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None, (cli.home / f"console-{port}.log").read_text()
            assert time.monotonic() < deadline, "longrun serve did not answer /healthz within 120 s"
            time.sleep(0.2)
        console = Console(url, proc)
        try:
            yield console
        finally:
            for client in console.clients:
                client.close()
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        log.close()


@pytest.fixture(scope="session")
def console(cli: Cli) -> Iterator[Console]:
    """alice, vera and otto with console passwords, and `longrun serve` on the process's stack."""
    add_console_users(cli)
    with serve(cli) as c:
        yield c
