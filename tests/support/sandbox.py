"""Helpers the sandbox tests share: run one Python snippet as an allow-listed command, and skip a
backend that does not work on this machine (with the reason)."""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from longrun.tools import RUN_COMMAND, ToolContext
from longrun.tools import sandbox as sb
from longrun.tools.base import ToolOutcome
from longrun.tools.sandbox import SandboxPolicy

PY = sys.executable

BACKENDS = [
    pytest.param("bwrap", id="bwrap"),
    pytest.param("unshare", id="unshare"),
]


def skip_unless(backend: sb.Backend) -> None:
    reason = sb.probe(backend)
    if reason is not None:
        pytest.skip(f"the {backend} sandbox does not work on this machine: {reason}")


def context(ws: Path, argv: list[str], policy: SandboxPolicy, timeout: float = 30.0) -> ToolContext:
    return ToolContext(run_id="r", workspace=ws, allowed_commands=[argv], command_timeout=timeout, sandbox=policy)


def run_python(ws: Path, code: str, policy: SandboxPolicy, timeout: float = 30.0) -> ToolOutcome:
    """`python -c CODE` through `run_command`, as a run's allow-list would have it."""
    argv = [PY, "-c", code]
    assert RUN_COMMAND.run is not None
    return RUN_COMMAND.run({"argv": argv}, context(ws, argv, policy, timeout))


@contextlib.contextmanager
def tcp_listener(host: str) -> Iterator[int]:
    """A TCP port on `host` that accepts (and closes) every connection, until the block ends: a
    stand-in for a database or the stack's Temporal. Yields the port."""
    server = socket.create_server((host, 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            with contextlib.suppress(OSError):
                server.accept()[0].close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join(2)
        server.close()
