"""What a sandboxed command may consume: rlimits on each process, and a cgroup around them all.

Why both: rlimits are per process (RLIMIT_DATA, RLIMIT_CPU, RLIMIT_FSIZE) or per user
(RLIMIT_NPROC counts every process of the worker's user, and the kernel exempts the host's root
from it), so they cannot bound a command *as a whole*: forty processes under a data limit each, or
a tmpfs filled to its size in each of five places, still add up. A cgroup can: `memory` (tmpfs
pages included) and `pids` bound everything the command starts. Not every host lets the worker
make one, so the cgroup is used where it can be had and `describe_limits` (shown by `status` and
recorded in each `tool_ran` event) says when it cannot.

The cgroup is made under the worker's own (cgroup v2 with the `memory` and `pids` controllers
delegated, else the v1 `memory` and `pids` hierarchies), one per command, entered by a tiny `sh`
prefix before anything of the command runs, and removed when the command has ended.

Tests: tests/test_sandbox_limits.py.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import resource
import shutil
import signal
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from longrun.tools.sandbox import SandboxPolicy

MiB = 1024 * 1024
ENTER_FAILED = 125
"""Exit code of the cgroup prefix when it could not enter the cgroup (the command did not run)."""
_ENTER = ('while [ "$1" != -- ]; do echo $$ > "$1/cgroup.procs" || { echo "longrun sandbox: setup failed: '
          'cannot enter the cgroup $1" >&2; exit 125; }; shift; done; shift; unset PWD; exec "$@"')  # sh would export PWD


def cpu_seconds(policy: SandboxPolicy, timeout: float) -> int:
    return policy.cpu_seconds or max(1, int(timeout + 0.999))


def rlimit_prefix(policy: SandboxPolicy, timeout: float) -> list[str]:
    """A `prlimit` prefix (inherited by every child): CPU seconds, data segment, file size, processes,
    no core files; [] without prlimit (then `set_rlimits` runs in the child instead)."""
    if shutil.which("prlimit") is None:
        return []
    cpu = cpu_seconds(policy, timeout)
    return ["prlimit", f"--cpu={cpu}:{cpu + 5}", f"--data={policy.memory_mb * MiB}", f"--fsize={policy.file_mb * MiB}",
            f"--nproc={policy.tasks}", "--core=0", "--"]


def set_rlimits(policy: SandboxPolicy, timeout: float) -> None:  # pragma: no cover - without prlimit only
    """`rlimit_prefix`'s limits, set in the child before it execs (where prlimit is missing)."""
    cpu = cpu_seconds(policy, timeout)
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
    resource.setrlimit(resource.RLIMIT_DATA, (policy.memory_mb * MiB,) * 2)
    resource.setrlimit(resource.RLIMIT_FSIZE, (policy.file_mb * MiB,) * 2)
    resource.setrlimit(resource.RLIMIT_NPROC, (policy.tasks,) * 2)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


# ------------------------------------------------------------------------------------ cgroups


@dataclass(frozen=True)
class _Site:
    """Where this worker may make cgroups: one parent directory per hierarchy, and whether it is v2."""

    parents: tuple[Path, ...]
    v2: bool


def _own_cgroups() -> dict[str, str]:
    """The worker's cgroup path per hierarchy ('' for v2, the controller list for v1)."""
    found = {}
    with open("/proc/self/cgroup") as f:
        for line in f:
            _id, controllers, path = line.rstrip("\n").split(":", 2)
            found[controllers] = path
    return found


def _mounts() -> list[tuple[str, str, set[str]]]:
    """(mount point, fs type, super options) of every cgroup mount."""
    found = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fstype, _src, opts = [*right.split(), "", ""][:3]
            if fstype in ("cgroup", "cgroup2"):
                found.append((left.split()[4], fstype, set(opts.split(","))))
    return found


def _v2_site(own: dict[str, str], mounts: list[tuple[str, str, set[str]]]) -> _Site | str:
    point = next((m for m, fstype, _ in mounts if fstype == "cgroup2"), None)
    if point is None or "" not in own:
        return "no cgroup v2 mount"
    parent = Path(point) / own[""].lstrip("/")
    try:
        available = set((parent / "cgroup.controllers").read_text().split())
        enabled = set((parent / "cgroup.subtree_control").read_text().split())
    except OSError as exc:
        return f"cgroup v2 at {parent} is not readable ({exc.strerror})"
    if not {"memory", "pids"} <= available:
        return f"cgroup v2 at {parent} has no memory and pids controllers ({' '.join(sorted(available)) or 'none'})"
    if not {"memory", "pids"} <= enabled:
        try:
            (parent / "cgroup.subtree_control").write_text("+memory +pids")
        except OSError as exc:
            return (f"the memory and pids controllers are not delegated below {parent} ({exc.strerror}); run the "
                    "worker in a cgroup of its own with them delegated (systemd: Delegate=yes)")
    return _Site((parent,), v2=True)


def _v1_site(own: dict[str, str], mounts: list[tuple[str, str, set[str]]]) -> _Site | str:
    parents = []
    for controller in ("memory", "pids"):
        point = next((m for m, fstype, opts in mounts if fstype == "cgroup" and controller in opts), None)
        path = next((p for ctl, p in own.items() if controller in ctl.split(",")), None)
        if point is None or path is None:
            return f"no cgroup v1 {controller} hierarchy"
        parents.append(Path(point) / path.lstrip("/"))
    return _Site(tuple(parents), v2=False)


_counter = itertools.count()
_site_lock = threading.Lock()
_site: list[_Site | str] = []


def _find_site() -> _Site | str:
    """Where this worker can make a cgroup that works (made and removed once, then remembered),
    or why it cannot."""
    with _site_lock:
        if not _site:
            _site.append(_probe_site())
        return _site[0]


def _probe_site() -> _Site | str:
    try:
        own, mounts = _own_cgroups(), _mounts()
    except OSError as exc:
        return f"cannot read the worker's cgroups ({exc.strerror})"
    reasons = []
    for finder in (_v2_site, _v1_site):
        site = finder(own, mounts)
        if isinstance(site, str):
            reasons.append(site)
            continue
        try:
            made = _make(site, f"longrun-probe-{os.getpid()}")
        except OSError as exc:
            reasons.append(f"cannot make a cgroup under {site.parents[0]} ({exc.strerror})")
            continue
        _remove(made)
        return site
    return "; ".join(reasons)


def cgroup_unavailable() -> str | None:
    """Why commands get no cgroup on this worker, or None when they do."""
    site = _find_site()
    return site if isinstance(site, str) else None


def _make(site: _Site, name: str) -> list[Path]:
    made: list[Path] = []
    try:
        for parent in site.parents:
            path = parent / name
            path.mkdir()
            made.append(path)
    except OSError:
        _remove(made)
        raise
    return made


def _remove(paths: list[Path]) -> None:
    for path in paths:
        with contextlib.suppress(OSError):
            path.rmdir()


@dataclass
class CommandCgroup:
    """The cgroup(s) of one command: `prefix()` enters them before the command's first exec,
    `close()` kills whatever is left in them and removes them."""

    paths: list[Path]
    v2: bool

    def prefix(self) -> list[str]:
        return ["sh", "-c", _ENTER, "sh", *[str(p) for p in self.paths], "--"]

    def oom_killed(self) -> bool:
        """Whether the memory limit killed a process of the command."""
        for path in self.paths:
            for name in ("memory.events", "memory.oom_control"):
                with contextlib.suppress(OSError):
                    for line in (path / name).read_text().splitlines():
                        key, _, value = line.partition(" ")
                        if key == "oom_kill" and value.strip() not in ("", "0"):
                            return True
        return False

    def close(self) -> None:
        for _ in range(50):
            pids = set()
            for path in self.paths:
                with contextlib.suppress(OSError):
                    pids |= {int(p) for p in (path / "cgroup.procs").read_text().split()}
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            _remove(self.paths)
            if not any(p.exists() for p in self.paths):
                return
            threading.Event().wait(0.02)  # the killed processes are still being reaped


def open_cgroup(policy: SandboxPolicy) -> CommandCgroup | None:
    """A fresh cgroup bounding the command's memory (`policy.memory_mb`, tmpfs pages included) and
    tasks (`policy.tasks`), or None when the policy or the host allows none."""
    if not policy.cgroup:
        return None
    site = _find_site()
    if isinstance(site, str):
        return None
    paths = _make(site, f"longrun-{os.getpid()}-{next(_counter)}")
    group = CommandCgroup(paths, site.v2)
    limits = ({"memory.max": policy.memory_mb * MiB, "memory.swap.max": 0, "pids.max": policy.tasks} if site.v2 else
              {"memory.limit_in_bytes": policy.memory_mb * MiB, "pids.max": policy.tasks})
    try:
        for name, value in limits.items():
            path = next((p / name for p in paths if (p / name).exists()), None)
            if path is not None:
                path.write_text(str(value))
            elif name != "memory.swap.max":
                raise OSError(f"{name} is missing")
    except OSError:
        group.close()
        raise
    return group


def describe_limits(policy: SandboxPolicy, backend: str) -> str:
    """The limits in force, for `status` and the audit: per process, per tmpfs, and as a whole
    (the cgroup) or why there is no cgroup."""
    parts = [f"memory {policy.memory_mb} MiB per process", f"files up to {policy.file_mb} MiB"]
    if backend != "none":
        parts.append(f"tmpfs {policy.tmpfs_mb} MiB each")
    if not policy.cgroup:
        cgroup = "no cgroup (turned off by the worker's settings)"
    elif (why := cgroup_unavailable()) is not None:
        cgroup = f"no cgroup ({why})"
    else:
        cgroup = f"a cgroup: memory {policy.memory_mb} MiB and {policy.tasks} tasks in all"
    parts += [f"{policy.tasks} tasks (RLIMIT_NPROC)", cgroup]
    return ", ".join(parts)
