"""The network of a sandbox whose run allows it: the outside, never the host.

Why not the host's network: a command that shares it reaches every service on the host's
loopback, the stack's unauthenticated Temporal first (the review listed workflows and cancelled
another run from a command). So a command always gets a network namespace of its own; with
`allow_network` it gets a user-mode network in it:

- `slirp4netns --disable-host-loopback` attached to the sandbox's namespace: a tap device and a
  default route whose connections leave from the host, except to the host's loopback;
- blackhole routes, added before the command runs (`sandbox_netsetup.py`), to the host's own
  addresses (a service bound to 0.0.0.0 answers on them), to the stack's hosts the worker names
  (`SandboxPolicy.deny_hosts`: its Temporal and PostgreSQL) and to link-local (cloud metadata).

Where slirp4netns is missing, `allow_network` is refused with what to install. The sandbox is
held before the command starts (bwrap's `--block-fd`, the `unshare` init's `net_go_fd`) until the
network is ready, and slirp4netns ends with the command (`--exit-fd`).

Tests: tests/test_sandbox_network.py.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import select
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from longrun.errors import ToolError

if TYPE_CHECKING:
    from longrun.tools.sandbox import SandboxPolicy

NETSETUP = Path(__file__).with_name("sandbox_netsetup.py")
LINK_LOCAL = "169.254.0.0/16"
SLIRP_CIDRS = ("10.0.2.0/24", "10.41.0.0/24", "172.31.250.0/24")
"""The sandbox's own subnet: the first that holds none of the host's addresses."""
SETUP_TIMEOUT = 20.0
INSTALL_HINT = ("install slirp4netns (Debian/Ubuntu: `apt install slirp4netns`; Fedora: `dnf install slirp4netns`), "
                "or run without `allow_network`")


def network_unavailable(path: str | None = None) -> str | None:
    """Why commands cannot have a network that keeps the host out of reach here, or None.

    Args:
        path: the PATH to look for slirp4netns on (default: the worker's).
    """
    if shutil.which("slirp4netns", path=path) is None:
        return ("`allow_network` needs slirp4netns, which gives a command the outside but not the host's loopback "
                f"or addresses, and it is not installed. To fix: {INSTALL_HINT}")
    return None


def host_addresses() -> list[str]:
    """The host's own IPv4 addresses, loopback aside (from /proc/net/fib_trie's local table)."""
    found: list[str] = []
    last = ""
    with contextlib.suppress(OSError), open("/proc/net/fib_trie") as f:
        for line in f:
            text = line.strip()
            if text.startswith("|--"):
                last = text[3:].strip()
            elif text.startswith("/32 host LOCAL") and last and not last.startswith("127.") and last not in found:
                found.append(last)
    return found


def _resolve(host: str) -> list[str]:
    try:
        return [str(ipaddress.ip_address(host))]
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None, socket.AF_INET, socket.SOCK_STREAM)
    except OSError:
        return []  # a host that does not resolve here is not reachable through here either
    return sorted({str(info[4][0]) for info in infos})


def blocked_networks(policy: SandboxPolicy) -> list[str]:
    """What the sandbox may not send to: the host's addresses, the stack's hosts, link-local."""
    found = [LINK_LOCAL]
    for address in [*host_addresses(), *(a for h in policy.deny_hosts for a in _resolve(h))]:
        ip = ipaddress.ip_address(address)
        if ip.version == 4 and not ip.is_loopback and f"{ip}/32" not in found:
            found.append(f"{ip}/32")
    return found


def _subnet(blocked: list[str]) -> str:
    nets = [ipaddress.ip_network(b) for b in blocked]
    return next((c for c in SLIRP_CIDRS if not any(n.overlaps(ipaddress.ip_network(c)) for n in nets)), SLIRP_CIDRS[0])


class SandboxEndedInSetup(ToolError):
    """The sandbox itself exited while its network was being set up, before the command ran.

    Nothing ran, so the caller may start the sandbox once more (seen once in CI under load: the
    bwrap child was gone when its namespaces were joined)."""


def _wait_readable(fd: int, proc: subprocess.Popen[bytes], what: str, sandbox: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + SETUP_TIMEOUT
    while not select.select([fd], [], [], 0.2)[0]:
        if proc.poll() is not None:
            kind = SandboxEndedInSetup if sandbox.poll() is not None else ToolError
            raise kind(f"the sandbox's network could not be set up: {what} ended first (exit code "
                       f"{proc.returncode})")
        if time.monotonic() > deadline:
            raise ToolError(f"the sandbox's network could not be set up: no answer from {what} in {SETUP_TIMEOUT:g} s")


class NetPlan:
    """The user-mode network of one sandboxed command: the file descriptors the sandbox needs
    (`pass_fds`, `bwrap_args`, `init_config`), then `start` once it runs, `close` when it ended."""

    def __init__(self, backend: str, policy: SandboxPolicy) -> None:
        self.backend = backend
        self.blocked = blocked_networks(policy)
        self._fds: list[int] = []
        self._slirp: subprocess.Popen[bytes] | None = None
        self._exit_w: int | None = None
        self._info_r, info_w = self._pipe()  # bwrap: its child's pid; unshare: the init is in its namespaces
        go_r, self._go_w = self._pipe()  # the sandbox waits on it before the command starts
        self.pass_fds = (info_w, go_r)
        """The sandbox's ends: the caller passes them on and closes its copies once it has started."""
        self._fds = [fd for fd in self._fds if fd not in self.pass_fds]

    def _pipe(self) -> tuple[int, int]:
        r, w = os.pipe()
        self._fds += [r, w]
        return r, w

    def bwrap_args(self) -> list[str]:
        info_w, go_r = self.pass_fds
        return ["--info-fd", str(info_w), "--block-fd", str(go_r)]

    def init_config(self) -> dict[str, Any]:
        info_w, go_r = self.pass_fds
        return {"net_ready_fd": info_w, "net_go_fd": go_r}

    def _sandbox_pid(self, proc: subprocess.Popen[bytes]) -> int:
        _wait_readable(self._info_r, proc, self.backend, proc)
        if self.backend == "unshare":
            os.read(self._info_r, 1)
            return proc.pid  # `unshare` itself lives in the namespaces it made
        data = b""
        while b"}" not in data:
            _wait_readable(self._info_r, proc, self.backend, proc)
            chunk = os.read(self._info_r, 4096)
            if not chunk:
                break
            data += chunk
        try:
            return int(json.loads(data.decode())["child-pid"])
        except (ValueError, KeyError) as exc:
            said = f"the sandbox's network could not be set up: bwrap said {data[:200]!r}"
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)  # an info pipe at its end: bwrap is exiting
            if proc.returncode is not None:
                raise SandboxEndedInSetup(f"{said} and exited with status {proc.returncode}") from exc
            raise ToolError(said) from exc

    def start(self, proc: subprocess.Popen[bytes]) -> None:
        """Attach slirp4netns to the sandbox, blackhole what it may not reach, then let the command start.

        Raises:
            SandboxEndedInSetup: the sandbox exited first (the caller may start it once more).
            ToolError: any other step failed (the caller ends the sandbox; the command never ran).
        """
        pid = self._sandbox_pid(proc)
        ready_r, ready_w = self._pipe()
        exit_r, self._exit_w = os.pipe()
        self._slirp = subprocess.Popen(
            ["slirp4netns", "--configure", "--mtu=65520", "--disable-host-loopback", "--enable-sandbox",
             f"--cidr={_subnet(self.blocked)}", f"--ready-fd={ready_w}", f"--exit-fd={exit_r}", str(pid), "tap0"],
            pass_fds=(ready_w, exit_r), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            start_new_session=True,
        )
        os.close(exit_r)
        os.close(ready_w)
        self._fds.remove(ready_w)
        _wait_readable(ready_r, self._slirp, "slirp4netns", proc)
        done = subprocess.run([sys.executable, "-I", "-S", str(NETSETUP), str(pid), *self.blocked],
                              capture_output=True, text=True, timeout=SETUP_TIMEOUT, stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            # a sandbox that exited before its routes were added leaves no namespace to join (ENOENT
            # on /proc/PID/ns/user): say so, its own error is on its stderr (seen once in CI, 2026-12-06)
            said = f"the sandbox's network could not be set up: {done.stderr.strip() or done.returncode}"
            if (ended := proc.poll()) is not None:
                raise SandboxEndedInSetup(f"{said} (the sandbox had already exited with status {ended})")
            raise ToolError(said)
        os.write(self._go_w, b"1")

    def close(self) -> None:
        """End slirp4netns (its exit fd closes) and close every descriptor."""
        if self._exit_w is not None:
            os.close(self._exit_w)
            self._exit_w = None
        if self._slirp is not None:
            try:
                self._slirp.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._slirp.kill()
                self._slirp.wait()
            if self._slirp.stderr is not None:
                self._slirp.stderr.close()
            self._slirp = None
        for fd in self._fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds = []
