"""Starting the test MCP server (`tests/support/mcp_server.py`) the ways a worker reaches one: as a
stdio command configured on the worker, or as a real streamable HTTP server on 127.0.0.1 in a
subprocess. Servers are the worker's configuration (`worker_settings`, or LONGRUN_MCP_CONFIG for
a worker in its own process); a run's spec only names them."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from longrun.models.mcp import McpServer, McpServerConfig, McpServerRef
from longrun.service.settings import Settings

SERVER = Path(__file__).with_name("mcp_server.py")


def stdio_config(name: str, state: Path, *, malicious: bool = False, **fields: object) -> McpServerConfig:
    """A worker's configuration of the test server over stdio."""
    command = [sys.executable, str(SERVER), "--state", str(state), *(["--malicious"] if malicious else [])]
    return McpServerConfig.model_validate({"name": name, "transport": "stdio", "command": command, **fields})


def stdio_server(name: str, state: Path, *, malicious: bool = False, read_only_tools: list[str] | None = None,
                 idempotent_tools: list[str] | None = None, **fields: object) -> McpServer:
    """The test server over stdio as a worker calls it for a run (its configuration and the run's
    declarations), for the client and tool parts on their own."""
    ref = McpServerRef(name=name, read_only_tools=read_only_tools or [], idempotent_tools=idempotent_tools or [])
    return stdio_config(name, state, malicious=malicious, **fields).for_run(ref)


def http_config(name: str, url: str, **fields: object) -> McpServerConfig:
    return McpServerConfig.model_validate({"name": name, "transport": "http", "url": url, **fields})


def worker_settings(*servers: McpServerConfig) -> Settings:
    """The worker's settings from the environment, offering `servers`."""
    return dataclasses.replace(Settings.from_env(), mcp_servers=servers)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def http_server(state: Path, token: str) -> Iterator[str]:
    """The test server over streamable HTTP, requiring `Authorization: <token>`; yields its URL."""
    port = _free_port()
    env = {**os.environ, "MCP_TEST_TOKEN": token}
    log = (state / "http-server.log").open("w")
    proc = subprocess.Popen([sys.executable, str(SERVER), "--state", str(state), "--http", str(port)],
                            env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the test MCP server did not start: {(state / 'http-server.log').read_text()}") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
