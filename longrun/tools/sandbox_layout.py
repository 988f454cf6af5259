"""Where a sandboxed command runs: what is hidden, what is bound back, and each backend's argv.

Split from `sandbox` (which runs the command and chooses the backend): this module only computes.
The worker's homes and `policy.hide` are hidden under a sized tmpfs; the interpreter's prefixes,
the command's install prefix and `policy.expose` are bound back read-only where they lie inside a
hidden path; the workspace is bound read-write, and its auto-run entries read-only over it.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from longrun.tools import sandbox_limits as limits
from longrun.tools.autorun import existing_autorun_paths

if TYPE_CHECKING:
    from longrun.tools.sandbox import SandboxPolicy
    from longrun.tools.sandbox_net import NetPlan

SANDBOX_HOME = "/tmp/home"
"""HOME inside a sandbox: an empty directory on the sandbox's own /tmp."""
EMPTY_DIRS = ("/tmp", "/var/tmp", "/run")
"""Always replaced by empty tmpfs inside a sandbox (sockets of local daemons live in /run and /tmp)."""
INIT_SCRIPT = Path(__file__).with_name("sandbox_init.py")


def minimal_env(home: str = SANDBOX_HOME) -> dict[str, str]:
    """The environment of a command: PATH, HOME (a fresh directory, never the worker's) and LANG."""
    return {"PATH": os.environ.get("PATH", os.defpath), "HOME": home, "LANG": "C.UTF-8"}


def worker_homes() -> list[str]:
    """The worker's home directories ($HOME and the password database's), always hidden."""
    homes = []
    with contextlib.suppress(KeyError):
        homes.append(pwd.getpwuid(os.getuid()).pw_dir)
    if os.environ.get("HOME"):
        homes.append(os.environ["HOME"])
    return [str(Path(h).resolve()) for h in homes if h and Path(h).resolve() != Path("/")]


def _inside(path: Path, roots: list[Path]) -> bool:
    return any(path != r and path.is_relative_to(r) for r in roots)


def _covers(path: Path, roots: list[Path]) -> bool:
    """`path` is one of `roots` or holds one (binding it back would undo the hiding)."""
    return any(r == path or r.is_relative_to(path) for r in roots)


def _install_prefix(program: str, env_path: str, cwd: Path) -> Path | None:
    """Where a program is installed: `<prefix>/bin/<name>` gives <prefix>, else its directory."""
    found = str(cwd / program) if "/" in program else shutil.which(program, path=env_path)
    if not found:
        return None
    real = Path(found).resolve()
    return real.parent.parent if real.parent.name == "bin" else real.parent


def layout(
    argv: list[str], workspace: Path, policy: SandboxPolicy, protect: Sequence[Path] = ()
) -> tuple[list[str], list[str]]:
    """(paths to hide, paths to bind read-only over what is there) for one command.

    Hidden: the worker's homes and `policy.hide`, where they exist. Bound read-only: the worker's
    own interpreter prefixes, the command's install prefix and `policy.expose`, where they lie
    inside a hidden path or one of `EMPTY_DIRS` without being (or holding) one of them; and the auto-run paths of the
    workspace (`.git`, `.husky`, `.envrc`, ...: `autorun.existing_autorun_paths`, and the nested
    ones in `protect`), so that the command cannot leave a hook behind that runs later, outside
    any sandbox.
    """
    hidden = sorted({str(Path(p).resolve()) for p in [*worker_homes(), *policy.hide] if p and Path(p).is_dir()})
    # /tmp, /var/tmp and /run are emptied too: an interpreter installed under them (a checkout in
    # /tmp with its .venv, as CI makes) is bound back like one under a hidden home
    roots = [Path(h) for h in hidden] + [Path(d).resolve() for d in EMPTY_DIRS if Path(d).is_dir()]
    candidates = [sys.base_prefix, sys.prefix, sys.exec_prefix, *policy.expose]
    prefix = _install_prefix(argv[0], minimal_env()["PATH"], workspace)
    if prefix is not None:
        candidates.append(str(prefix))
    expose: list[str] = []
    for c in candidates:
        p = Path(c).resolve()
        if p.exists() and _inside(p, roots) and not _covers(p, roots) and str(p) not in expose:
            expose.append(str(p))
    ws = workspace.resolve()
    for p in [*existing_autorun_paths(ws), *protect]:
        real = p.resolve()
        if real.is_relative_to(ws) and real != ws and str(real) not in expose:
            expose.append(str(real))
    # the workspace itself may lie inside a hidden path: it is bound after (over) the tmpfs
    return [h for h in hidden if Path(h) != ws], expose


def _by_depth(path: str) -> int:
    return len(Path(path).parts)


def bwrap_argv(
    argv: list[str], workspace: Path, policy: SandboxPolicy, net: NetPlan | None, protect: Sequence[Path]
) -> list[str]:
    hidden, expose = layout(argv, workspace, policy, protect)
    ws = str(workspace.resolve())
    out = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
           "--hostname", "longrun-sandbox"]
    if net is not None:
        out += net.bwrap_args()  # a network namespace of its own still, with slirp4netns attached
    out.append("--clearenv")
    for key, value in minimal_env().items():
        out += ["--setenv", key, value]
    out += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    size = ["--size", str(policy.tmpfs_mb * limits.MiB), "--tmpfs"]
    ops: list[tuple[int, int, list[str]]] = [(_by_depth("/dev/shm"), 0, [*size, "/dev/shm"])]
    for d in EMPTY_DIRS:
        if Path(d).is_dir():
            ops.append((_by_depth(d), 0, [*size, d]))
    ops += [(_by_depth(h), 0, [*size, h]) for h in hidden]
    ops.append((_by_depth(ws), 1, ["--bind", ws, ws]))
    ops += [(_by_depth(e), 2, ["--ro-bind", e, e]) for e in expose]
    for _, _, op in sorted(ops, key=lambda o: (o[0], o[1])):
        out += op
    # /dev is bwrap's own tmpfs, of no bounded size: read-only (its device nodes still work)
    out += ["--remount-ro", "/dev", "--dir", SANDBOX_HOME, "--chdir", ws, "--", *argv]
    return out


def unshare_argv(
    argv: list[str], workspace: Path, policy: SandboxPolicy, stage: str, watch_fd: int, net: NetPlan | None,
    protect: Sequence[Path],
) -> list[str]:
    hidden, expose = layout(argv, workspace, policy, protect)
    ws = str(workspace.resolve())
    config = {
        "stage": stage, "hide": hidden, "binds": [ws], "expose": expose, "cwd": ws, "env": minimal_env(),
        "argv": argv, "watch_fd": watch_fd, "tmpfs_size": policy.tmpfs_mb * limits.MiB,
        **(net.init_config() if net is not None else {}),
    }
    flags = ["--user", "--map-root-user", "--mount", "--pid", "--fork", "--mount-proc", "--ipc", "--uts", "--net",
             "--kill-child=SIGKILL"]
    return ["unshare", *flags, sys.executable, "-I", "-S", str(INIT_SCRIPT), json.dumps(config)]
