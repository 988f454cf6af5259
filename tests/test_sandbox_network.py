"""`allow_network: true` gives a command the outside, not the host (issue 24, finding 8).

The review's command, with the network allowed, listed workflows on the stack's unauthenticated
Temporal and cancelled another run: the sandbox shared the host's network, loopback included. Here
a TCP listener on the host (on every address: loopback, the host's own addresses) stands in for
Temporal; a command with the network allowed must reach none of them, nor the host through the
gateway the sandbox sees, while it does get a network of its own (an interface and a default
route). No outside address is ever contacted.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from longrun.tools import sandbox as sb
from longrun.tools import sandbox_net
from longrun.tools.sandbox import SandboxPolicy
from tests.support.sandbox import BACKENDS, run_python, skip_unless
from tests.support.sandbox import tcp_listener as support_tcp_listener


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    w = tmp_path / "ws"
    w.mkdir()
    return w


@pytest.fixture
def host_listener() -> Iterator[int]:
    """A TCP port that accepts on every address of the host (a stand-in for the stack's services)."""
    with support_tcp_listener("0.0.0.0") as port:
        yield port


PROBE = """
import json, socket, struct
def gateways():
    found = []
    with open('/proc/net/route') as f:
        for line in list(f)[1:]:
            fields = line.split()
            if fields[1] == '00000000':
                found.append(socket.inet_ntoa(struct.pack('<I', int(fields[2], 16))))
    return found
report = {{'gateways': gateways(), 'connected': [], 'refused': []}}
for host in {targets!r} + report['gateways']:
    try:
        socket.create_connection((host, {port}), timeout=3).close()
        report['connected'].append(host)
    except OSError as exc:
        report['refused'].append([host, type(exc).__name__])
print('NET ' + json.dumps(report))
"""


def _report(text: str) -> dict[str, list[str]]:
    line = next((x for x in text.splitlines() if x.startswith("NET ")), None)
    assert line is not None, text
    return dict(json.loads(line.removeprefix("NET ")))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("backend", BACKENDS)
def test_with_the_network_allowed_the_host_is_out_of_reach(ws: Path, backend: sb.Backend, host_listener: int) -> None:
    skip_unless(backend)
    if (why := sandbox_net.network_unavailable()) is not None:
        pytest.skip(f"no user-mode network on this machine: {why}")
    own = sandbox_net.host_addresses()
    targets = ["127.0.0.1", "localhost", *own]
    # the control: from the host itself the listener answers on each of them
    for host in targets:
        socket.create_connection((host, host_listener), timeout=3).close()
    outcome = run_python(ws, PROBE.format(targets=targets, port=host_listener),
                         SandboxPolicy(mode=backend, allow_network=True))
    report = _report(outcome.text)
    assert report["connected"] == [], outcome.text
    assert report["gateways"], f"the sandbox got no network of its own: {outcome.text}"
    assert outcome.sandbox is not None and "network allowed: outbound only" in outcome.sandbox, outcome.sandbox


def test_the_stack_hosts_the_worker_names_are_blocked_too() -> None:
    """`deny_hosts` (the worker's Temporal and PostgreSQL hosts) are blackholed by address, beside
    the host's own addresses and link-local (cloud metadata); a name that does not resolve is skipped."""
    blocked = sandbox_net.blocked_networks(SandboxPolicy(deny_hosts=("localhost", "192.0.2.77", "no-such-host.invalid")))
    assert "192.0.2.77/32" in blocked and "169.254.0.0/16" in blocked
    assert all(f"{a}/32" in blocked for a in sandbox_net.host_addresses())


def test_without_a_user_mode_network_allow_network_is_refused_with_how_to_fix(ws: Path) -> None:
    reason = sandbox_net.network_unavailable(path="")
    assert reason is not None and "slirp4netns" in reason and "apt install slirp4netns" in reason


@pytest.mark.timeout(60)
def test_a_sandbox_that_ends_during_its_network_setup_is_told_apart_so_it_can_be_started_again(ws: Path) -> None:
    """Once in CI the bwrap child was gone when its namespaces were joined (ENOENT on
    /proc/PID/ns/user). The command had not run, so `execute` starts the sandbox once more; for
    that the failure must say the sandbox itself ended, not that the network is broken."""
    skip_unless("bwrap")
    if (why := sandbox_net.network_unavailable()) is not None:
        pytest.skip(f"no user-mode network on this machine: {why}")
    policy = SandboxPolicy(mode="bwrap", allow_network=True)
    net = sandbox_net.NetPlan("bwrap", policy)
    try:
        cmd = sb.bwrap_argv(["true"], ws, policy, net, ())
        proc = subprocess.Popen(cmd, env=sb.minimal_env(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True, pass_fds=net.pass_fds)
        for fd in net.pass_fds:
            os.close(fd)
        os.killpg(proc.pid, signal.SIGKILL)  # the sandbox ends before its network is ready
        proc.wait()
        with pytest.raises(sandbox_net.SandboxEndedInSetup, match="could not be set up"):
            net.start(proc)
    finally:
        net.close()
