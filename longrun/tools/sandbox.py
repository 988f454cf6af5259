"""The sandbox every `run_command` runs in.

An allow-listed command runs code the model can change (an approved `conftest.py` runs on the
allowed `python -m pytest -q`), so the command, not the allow-list, is the boundary. Each command
runs in a new set of namespaces, with nothing of the worker but what it needs:

- **the filesystem** read-only, except the workspace (read-write, at its own path; its `.git`,
  `.husky`, `.vscode`, `.github/workflows`, `.envrc` and `.pre-commit-config.yaml`, where they
  exist, stay read-only); `HOME` is a fresh empty directory, `/tmp`, `/var/tmp` and `/run` are
  empty tmpfs, the worker's home and `$LONGRUN_HOME` (the stack's data, its URLs and keys) are
  hidden under empty tmpfs. What must stay visible inside a hidden home (the interpreter's prefix,
  the command's install prefix, e.g. a pyenv Python under `~/.pyenv`) is bound back read-only;
- **the environment** PATH, HOME and LANG only (`minimal_env`);
- **no network** (a new network namespace with only loopback) unless the run spec says
  `allow_network: true`; then a user-mode network (`sandbox_net`: slirp4netns) that reaches the
  outside but not the host's loopback, the host's addresses or the stack's hosts;
- **its own processes only**: a new pid namespace with its own `/proc`, so no `/proc/<ppid>/environ`
  of the worker; when the command ends, every process it left behind is killed (the namespace
  ends with its first process), a daemon too;
- **limits** (`sandbox_limits`): the wall-time limit (`command_timeout_seconds`), CPU seconds (the
  same number), a data-segment limit (`command_memory_mb`), a file-size limit and a process limit
  per process, no core files; a size on every tmpfs; a cgroup around the whole command (memory,
  tasks) where the host allows one; and only the first MiB of each output stream kept.

Backends (`RunSpec.sandbox`, else the worker's `LONGRUN_SANDBOX`, else `auto`):

- `bwrap`: bubblewrap (`--unshare-all --die-with-parent --clearenv --cap-drop ALL`, `--ro-bind / /`,
  `--bind` of the workspace, a sized `--tmpfs` of HOME, /tmp and the hidden paths, its own `/dev`
  (read-only), `/proc`);
- `unshare`: util-linux `unshare` (user, mount, pid, net, ipc and uts namespaces) with
  `sandbox_init.py` as the namespace's first process, which builds the same view by hand and drops
  every capability before it runs the command;
- `none`: no sandbox: the minimal environment, a fresh HOME and the limits only. Only when the
  operator says so; the command can then read whatever the worker can.
- `auto`: `bwrap` when it works here, else `unshare` when it works here, else commands are
  refused, with a message saying how to get one.

Whether a backend works is found out once per worker process, by running `true` in it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal, get_args

from longrun.errors import SandboxUnavailable, ToolError
from longrun.tools import sandbox_limits as limits
from longrun.tools.sandbox_io import Sink, pump
from longrun.tools.sandbox_layout import (
    EMPTY_DIRS,
    INIT_SCRIPT,
    SANDBOX_HOME,
    bwrap_argv,
    layout,
    minimal_env,
    unshare_argv,
    worker_homes,
)
from longrun.tools.sandbox_net import NetPlan, SandboxEndedInSetup, network_unavailable

SandboxMode = Literal["auto", "bwrap", "unshare", "none"]
Backend = Literal["bwrap", "unshare", "none"]
SANDBOX_MODES: tuple[str, ...] = get_args(SandboxMode)

__all__ = [
    "EMPTY_DIRS", "INIT_SCRIPT", "INSTALL_HINT", "SANDBOX_HOME", "SANDBOX_MODES", "Backend", "Finished",
    "SandboxMode", "SandboxPolicy", "choose", "describe", "execute", "layout", "minimal_env", "probe",
    "reset_probes", "worker_homes",
]

PROBE_TIMEOUT = 20.0
SETUP_FAILED = 125
"""Exit code of `sandbox_init.py` when it could not build the sandbox."""
SETUP_ATTEMPTS = 2
"""Starts of a sandbox that exited during its network setup: the command had not run, so once more is safe."""
KEEP_BYTES = 1 << 20
"""Of each stream, what `execute` keeps by default (the rest is counted and dropped)."""

INSTALL_HINT = (
    "install bubblewrap (Debian/Ubuntu: `apt install bubblewrap`; Fedora: `dnf install bubblewrap`), or allow "
    "unprivileged user namespaces so util-linux `unshare` works (sysctl kernel.unprivileged_userns_clone=1; on "
    "Ubuntu 24.04 also kernel.apparmor_restrict_unprivileged_userns=0), or, to run commands with no sandbox at "
    "all (they can then read everything the worker can, its secrets included), set LONGRUN_SANDBOX=none for the worker "
    "(or LONGRUN_ALLOW_UNSANDBOXED=1 there, and `sandbox: none` in the run spec)"
)


@dataclass(frozen=True)
class SandboxPolicy:
    """How one run's commands are confined.

    Attributes:
        mode: the backend asked for (`auto` chooses; see the module docstring).
        allow_network: keep the host's network (default: only a loopback of the sandbox's own).
        memory_mb: RLIMIT_DATA of every process of the command, in MiB.
        cpu_seconds: RLIMIT_CPU of every process; None: the command's wall-time limit.
        hide: paths hidden under an empty tmpfs besides the worker's home (the worker passes
            `$LONGRUN_HOME`).
        expose: paths inside hidden ones to bind back read-only (toolchains under a home).
        file_mb: RLIMIT_FSIZE of every process: the largest file it may write, in MiB.
        tmpfs_mb: the size of each tmpfs of the sandbox (/tmp, /var/tmp, /run, /dev/shm, the hidden
            homes), in MiB; without it each may take half the machine's RAM.
        tasks: the most processes (and threads) the command may have at once: the cgroup's
            `pids.max`, and RLIMIT_NPROC (which counts every process of the worker's user).
        cgroup: put each command in a cgroup of its own (memory and tasks bounded as a whole) where
            the host lets the worker make one; False: rlimits only.
        deny_hosts: with the network allowed, addresses (or host names) commands may not reach
            besides the host's own: the worker passes its Temporal and PostgreSQL hosts.
    """

    mode: SandboxMode = "auto"
    allow_network: bool = False
    memory_mb: int = 4096
    cpu_seconds: int | None = None
    hide: tuple[str, ...] = ()
    expose: tuple[str, ...] = ()
    file_mb: int = 1024
    tmpfs_mb: int = 512
    tasks: int = 1024
    cgroup: bool = True
    deny_hosts: tuple[str, ...] = ()


@dataclass(frozen=True)
class Finished:
    """How a command ended: its exit code (negative: killed by that signal from outside; 128+N:
    died of signal N inside a pid namespace), whether the wall-time limit killed it, and where it ran."""

    code: int
    timed_out: bool
    backend: Backend
    stdout_bytes: int = 0
    """How much the command wrote to stdout (only `keep_bytes` of it were kept)."""
    stderr_bytes: int = 0
    oom_killed: bool = False
    """The cgroup's memory limit killed one of its processes."""


def _check_program(argv: list[str], cwd: Path) -> None:
    program = argv[0]
    if "/" in program:
        path = cwd / program
        if not path.exists():
            raise ToolError(f"command not found: {program!r} does not exist (relative to the workspace)")
        if not os.access(path, os.X_OK):
            raise ToolError(f"command {program!r} is not executable")
    elif shutil.which(program, path=minimal_env()["PATH"]) is None:
        raise ToolError(f"command not found: {program!r} is not on PATH in the command environment")


def execute(
    argv: list[str],
    *,
    workspace: Path,
    policy: SandboxPolicy,
    timeout: float,
    stdout: IO[bytes],
    stderr: IO[bytes],
    backend: Backend | None = None,
    keep_bytes: int = KEEP_BYTES,
    protect: Sequence[Path] = (),
) -> Finished:
    """Run `argv` in the workspace under `policy`; the first `keep_bytes` of each stream go to the
    given files, the rest is counted and dropped (`sandbox_io`).

    Args:
        backend: the backend to use (the probe passes it); default: `choose(policy.mode)`.
        protect: more paths in the workspace to bind read-only (nested auto-run entries).

    Raises:
        SandboxUnavailable: no sandbox this policy allows works on this machine.
        ToolError: the program does not exist or cannot be run, or the sandbox failed to start.
    """
    backend = backend or choose(policy.mode)
    cwd = workspace.resolve()
    _check_program(argv, cwd)
    if policy.allow_network and backend != "none" and (why := network_unavailable()) is not None:
        raise SandboxUnavailable(why)
    for attempt in range(SETUP_ATTEMPTS):
        try:
            return _execute_once(argv, cwd, policy, timeout, stdout, stderr, backend, keep_bytes, protect)
        except SandboxEndedInSetup as exc:
            if attempt == SETUP_ATTEMPTS - 1:
                raise ToolError(str(exc)) from exc
    raise AssertionError("unreachable")


def _execute_once(argv: list[str], cwd: Path, policy: SandboxPolicy, timeout: float, stdout: IO[bytes],
                  stderr: IO[bytes], backend: Backend, keep_bytes: int, protect: Sequence[Path]) -> Finished:
    prefix = limits.rlimit_prefix(policy, timeout)
    with contextlib.ExitStack() as stack:
        net = NetPlan(backend, policy) if policy.allow_network and backend != "none" else None
        if net is not None:
            stack.callback(net.close)
        pass_fds: tuple[int, ...] = net.pass_fds if net is not None else ()
        if backend == "bwrap":
            cmd, env = bwrap_argv(argv, cwd, policy, net, protect), minimal_env()
        elif backend == "unshare":
            stage = tempfile.mkdtemp(prefix="longrun-sandbox-")
            stack.callback(_rmdir, stage)  # empty on the host: the sandbox's mounts were its own
            watch_r, watch_w = os.pipe()
            stack.callback(os.close, watch_w)  # closed when the worker dies, too: the sandbox ends then
            pass_fds = (*pass_fds, watch_r)
            cmd, env = unshare_argv(argv, cwd, policy, stage, watch_r, net, protect), minimal_env()
        else:
            home = tempfile.mkdtemp(prefix="longrun-home-")
            stack.callback(shutil.rmtree, home, ignore_errors=True)
            cmd, env = argv, minimal_env(home)
        try:
            group = limits.open_cgroup(policy)
        except OSError as exc:
            raise ToolError(f"the command's cgroup could not be made, so the command did not run: {exc}. To run "
                            "commands without one, set LONGRUN_SANDBOX_CGROUP=off for the worker") from exc
        if group is not None:
            stack.callback(group.close)
            prefix = [*group.prefix(), *prefix]
        try:
            proc = subprocess.Popen(
                [*prefix, *cmd], shell=False, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, start_new_session=True, pass_fds=pass_fds,
                preexec_fn=None if prefix else (lambda: limits.set_rlimits(policy, timeout)),  # without prlimit only
            )
        except FileNotFoundError as exc:
            raise ToolError(f"command not found: {argv[0]!r} is not on PATH in the command environment") from exc
        except PermissionError as exc:
            raise ToolError(f"command {argv[0]!r} is not executable: {exc}") from exc
        finally:
            for fd in pass_fds:
                os.close(fd)
        assert proc.stdout is not None and proc.stderr is not None
        stack.callback(proc.stdout.close)
        stack.callback(proc.stderr.close)
        if net is not None:
            try:
                net.start(proc)
            except SandboxEndedInSetup as exc:
                _kill_group(proc.pid)
                proc.wait()
                said = _said_so_far(proc.stderr)
                raise SandboxEndedInSetup(f"{exc}{f'; it said: {said}' if said else ''}. The command did not run; "
                                          "to run it without the network, drop `allow_network` from the run spec") from exc
            except (ToolError, OSError, subprocess.SubprocessError) as exc:
                _kill_group(proc.pid)
                proc.wait()
                raise ToolError(f"{exc}. The command did not run; to run it without the network, drop "
                                "`allow_network` from the run spec") from exc
        sinks = {proc.stdout.fileno(): Sink(stdout, keep_bytes), proc.stderr.fileno(): Sink(stderr, keep_bytes)}
        # in a sandbox the pid namespace ends every process the command started; under `none` one
        # that left the group survives, and only its pipes are given up
        code, timed_out = pump(proc, sinks, timeout, lambda: _kill_group(proc.pid))
        _kill_group(proc.pid)
        oom = group is not None and group.oom_killed()
    out, err = sinks.values()
    if code in (SETUP_FAILED, limits.ENTER_FAILED) and not timed_out:
        stderr.seek(0)
        said = stderr.read(4000).decode("utf-8", "replace")
        if "longrun sandbox: setup failed" in said:
            raise ToolError(f"the sandbox could not be set up, so the command did not run: {said.strip()}")
    return Finished(code=code, timed_out=timed_out, backend=backend, stdout_bytes=out.total, stderr_bytes=err.total,
                    oom_killed=oom)


def _said_so_far(pipe: IO[bytes], limit: int = 2000) -> str:
    """What an ended sandbox wrote to its stderr, without waiting on a writer that is still there."""
    os.set_blocking(pipe.fileno(), False)
    try:
        data = os.read(pipe.fileno(), limit)
    except (BlockingIOError, OSError):
        return ""
    return data.decode("utf-8", "replace").strip()


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _rmdir(path: str) -> None:
    with contextlib.suppress(OSError):
        os.rmdir(path)


_probed: dict[str, str | None] = {}
_probe_lock = threading.Lock()


def probe(backend: Backend) -> str | None:
    """Why `backend` does not work on this machine, or None when it does (found out once: `true`
    is run in it)."""
    with _probe_lock:
        if backend in _probed:
            return _probed[backend]
        _probed[backend] = reason = _probe(backend)
        return reason


def reset_probes() -> None:
    """Forget what `probe` found (tests; a worker after the operator installed bubblewrap)."""
    with _probe_lock:
        _probed.clear()


def _probe(backend: Backend) -> str | None:
    if backend == "none":
        return None
    if shutil.which(backend) is None:
        return f"`{backend}` is not installed"
    with tempfile.TemporaryDirectory(prefix="longrun-probe-") as ws, tempfile.TemporaryFile() as out, \
            tempfile.TemporaryFile() as err:
        try:
            done = execute(["true"], workspace=Path(ws), policy=SandboxPolicy(mode=backend), timeout=PROBE_TIMEOUT,
                           stdout=out, stderr=err, backend=backend)
        except ToolError as exc:
            return str(exc)
        if done.code == 0:
            return None
        err.seek(0)
        said = err.read(2000).decode("utf-8", "replace").strip()
        return f"`{backend}` does not work here (exit code {done.code}): {said or 'no message'}"


def choose(mode: SandboxMode) -> Backend:
    """The backend commands run in under `mode`.

    Raises:
        SandboxUnavailable: the backend asked for does not work here, or (`auto`) neither does.
    """
    if mode not in SANDBOX_MODES:
        raise SandboxUnavailable(f"unknown sandbox {mode!r}; choose one of {', '.join(SANDBOX_MODES)}")
    if mode == "none":
        return "none"
    if mode in ("bwrap", "unshare"):
        reason = probe(mode)
        if reason is None:
            return mode
        raise SandboxUnavailable(f"commands run only in a sandbox, and sandbox {mode!r} is not available: {reason}. "
                                 f"To fix: {INSTALL_HINT}")
    reasons = []
    candidates: tuple[Backend, ...] = ("bwrap", "unshare")
    for candidate in candidates:
        reason = probe(candidate)
        if reason is None:
            return candidate
        reasons.append(f"{candidate}: {reason}")
    raise SandboxUnavailable(f"commands run only in a sandbox, and none works on this worker ({'; '.join(reasons)}). "
                             f"To fix: {INSTALL_HINT}")


def describe(backend: Backend, policy: SandboxPolicy) -> str:
    """One line for status and the audit: the backend, whether the network is on, and the limits
    in force (`sandbox_limits.describe_limits`)."""
    if backend == "none":
        return f"none (no sandbox: the operator chose it; {limits.describe_limits(policy, backend)})"
    network = ("network allowed: outbound only (slirp4netns; the host's loopback and addresses, the stack's hosts "
               "and link-local blocked)" if policy.allow_network else "no network")
    return f"{backend} ({network}; {limits.describe_limits(policy, backend)})"
