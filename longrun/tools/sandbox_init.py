"""The first process of an `unshare` sandbox: builds the filesystem view, then runs the command.

Run by `longrun.tools.sandbox` as

    unshare --user --map-root-user --mount --pid --fork --mount-proc --ipc --uts [--net] \\
        PYTHON -I -S sandbox_init.py CONFIG_JSON

so it starts as pid 1 of a new pid namespace, root of a new user namespace (which maps it to the
worker's own uid: it has no more rights on the host than the worker), in a private mount
namespace. This file imports the standard library only and nothing of longrun: it runs with `-I
-S`, before and while the rest of the host filesystem is hidden.

What it does, in order:

1. mounts a tmpfs on the stage directory the worker made, and recursively binds the host's `/`
   into it (`<stage>/root`);
2. on that copy: a tmpfs of `tmpfs_size` bytes over `/tmp`, `/var/tmp`, `/run` and every hidden
   path (the worker's home, `$LONGRUN_HOME`), read-only binds of what must stay visible inside those (the interpreter's
   prefix, the command's install prefix) and of the workspace's auto-run paths (`.git`, ...),
   a minimal `/dev` (null, zero, full, random, urandom, tty, a new devpts,
   a tmpfs `/dev/shm` of `tmpfs_size`; `/dev` itself read-only), and the workspace bound read-write back at its own path; shallower
   mounts first, so a workspace inside a hidden home stays visible;
3. remounts every other mount of the copy read-only;
4. `pivot_root` into the copy and detaches the old root: nothing outside the copy is reachable;
5. brings the loopback interface up (a new network namespace starts with it down); with the
   network allowed, says so on `net_ready_fd` and waits on `net_go_fd` until the worker has
   attached slirp4netns to the namespace (`longrun.tools.sandbox_net`);
6. forks the command with an empty capability set (bounding set dropped, `SECBIT_NOROOT` locked,
   `no_new_privs`), so it cannot undo any of this (remount, mount, chroot, ptrace the init);
7. waits for it, reaping orphans, and exits with its status. When this process exits, the kernel
   kills every process left in the pid namespace: a daemon the command started ends with it.
   It also exits (and so kills everything) when the worker dies: the worker holds the write end
   of a pipe whose read end is `watch_fd` here, and its end-of-file means the worker is gone.

A command that dies of signal N is reported as exit code 128+N (pid 1 cannot re-raise a signal
on itself).
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import json
import os
import re
import select
import signal
import socket
import struct
import sys
import warnings  # noqa: F401 - os.execvpe imports it lazily, after the host's stdlib may be hidden
from typing import Any

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_NOATIME = 1024
MS_NODIRATIME = 2048
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MS_RELATIME = 1 << 21
MS_STRICTATIME = 1 << 24
MNT_DETACH = 2

PR_CAPBSET_DROP = 24
PR_SET_SECUREBITS = 28
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
# noroot, no_setuid_fixup, keep_caps off, no_cap_ambient_raise; each with its lock bit
SECUREBITS = (1 << 0) | (1 << 1) | (1 << 2) | (1 << 3) | (1 << 5) | (1 << 6) | (1 << 7)
CAPABILITY_VERSION_3 = 0x20080522

SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41, "ppc64le": 203, "s390x": 217}
"""pivot_root(2) has no libc wrapper; its syscall number per machine."""

OPTION_FLAGS = {
    "nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC, "noatime": MS_NOATIME,
    "nodiratime": MS_NODIRATIME, "relatime": MS_RELATIME, "strictatime": MS_STRICTATIME,
}
"""Per-mount flags a remount must repeat (in a user namespace the kernel refuses to clear them)."""

DEVICES = ("null", "zero", "full", "random", "urandom", "tty")

libc = ctypes.CDLL(None, use_errno=True)


class SetupError(Exception):
    pass


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise SetupError(f"{what}: {os.strerror(err)} (errno {err})")


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    def enc(s: str | None) -> bytes | None:
        return None if s is None else s.encode()

    _check(libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)),
           f"mount {source or fstype} on {target}")


def _unescape(path: str) -> str:
    """mountinfo writes space, tab, newline and backslash as octal escapes."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), path)


def mounts_under(root: str) -> list[tuple[str, int]]:
    """(mount point, per-mount flags) of every mount at or below `root`, in mount order."""
    found = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            point = _unescape(fields[4])
            if point == root or point.startswith(root.rstrip("/") + "/"):
                flags = 0
                for opt in fields[5].split(","):
                    flags |= OPTION_FLAGS.get(opt, 0)
                found.append((point, flags))
    return found


def build_root(cfg: dict[str, Any]) -> str:
    stage = cfg["stage"]
    size = int(cfg["tmpfs_size"])
    mount("tmpfs", stage, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755")
    root = os.path.join(stage, "root")
    os.mkdir(root)
    mount("/", root, None, MS_BIND | MS_REC)
    mount(None, root, None, MS_PRIVATE | MS_REC)

    def inside(path: str) -> str:
        return os.path.join(root, path.lstrip("/"))

    ops: list[tuple[str, str]] = [("tmpfs", p) for p in ("/tmp", "/var/tmp", "/run")]
    ops += [("dev", "/dev")]
    ops += [("tmpfs", p) for p in cfg["hide"]]
    ops += [("bind", p) for p in cfg["binds"]]
    ops += [("expose", p) for p in cfg["expose"]]
    # shallower first; on the same path a bind after the tmpfs, so the bind wins
    order = {"tmpfs": 0, "dev": 0, "bind": 1, "expose": 2}
    ops.sort(key=lambda op: (len([c for c in op[1].split("/") if c]), order[op[0]]))
    writable: set[str] = set()
    for kind, path in ops:
        target = inside(path)
        if kind in ("bind", "expose"):
            if not os.path.exists(path):
                continue
            # what is missing is only ever inside one of our tmpfs: the path exists on the host
            if os.path.isdir(path):
                os.makedirs(target, exist_ok=True)
            elif not os.path.exists(target):
                os.makedirs(os.path.dirname(target), exist_ok=True)
                open(target, "w").close()
            mount(path, target, None, MS_BIND | MS_REC)
            if kind == "bind":
                writable.update(p for p, _ in mounts_under(target))
            continue
        if not os.path.isdir(target) or os.path.islink(target.rstrip("/")):
            continue  # nothing there to hide (a symlink is followed to what it names, also hidden if listed)
        if kind == "dev":
            # device nodes and symlinks only: a small tmpfs, read-only once populated (the nodes still work)
            mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m")
            writable.update(_populate_dev(target, size))
            continue
        mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, f"mode=0755,size={size}")
        writable.add(target)
    for point, flags in mounts_under(root):
        if point in writable:
            continue
        try:
            mount(None, point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags)
        except SetupError:
            if point == root:
                raise
            # a mount below one we replaced (e.g. the host's /dev/pts under our /dev): unreachable
            if not os.path.exists(point):
                continue
            raise
    return root


def _populate_dev(dev: str, shm_size: int) -> list[str]:
    extra = []
    for name in DEVICES:
        node = os.path.join(dev, name)
        open(node, "w").close()
        try:
            mount("/dev/" + name, node, None, MS_BIND)
        except SetupError:
            os.unlink(node)
    for name, to in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                     ("stderr", "/proc/self/fd/2"), ("ptmx", "pts/ptmx")):
        os.symlink(to, os.path.join(dev, name))
    shm = os.path.join(dev, "shm")
    os.mkdir(shm)
    mount("tmpfs", shm, "tmpfs", MS_NOSUID | MS_NODEV, f"mode=1777,size={shm_size}")
    extra.append(shm)
    pts = os.path.join(dev, "pts")
    os.mkdir(pts)
    try:
        mount("devpts", pts, "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=620")
        extra.append(pts)
    except SetupError:
        pass  # no pseudo-terminals then; commands run without a terminal anyway
    return extra


def pivot(root: str) -> None:
    number = SYS_PIVOT_ROOT.get(os.uname().machine)
    if number is None:
        raise SetupError(f"pivot_root: unknown syscall number on {os.uname().machine}")
    os.chdir(root)
    _check(libc.syscall(ctypes.c_long(number), b".", b"."), "pivot_root")
    _check(libc.umount2(b".", MNT_DETACH), "detach the old root")
    os.chdir("/")


def loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        ifr = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(s, 0x8913, ifr))[1]  # SIOCGIFFLAGS
        fcntl.ioctl(s, 0x8914, struct.pack("16sH14x", b"lo", flags | 1))  # SIOCSIFFLAGS, IFF_UP


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def drop_capabilities() -> None:
    with open("/proc/sys/kernel/cap_last_cap") as f:
        last = int(f.read())
    for cap in range(last + 1):
        _check(libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), f"drop capability {cap} from the bounding set")
    _check(libc.prctl(PR_SET_SECUREBITS, SECUREBITS, 0, 0, 0), "set securebits")
    _check(libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "clear ambient capabilities")
    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "set no_new_privs")
    header = _CapHeader(CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    _check(libc.capset(ctypes.byref(header), ctypes.byref(data)), "clear capabilities")


def run_child(cfg: dict[str, Any]) -> int:
    pid = os.fork()
    if pid:
        return pid
    try:
        os.close(cfg["watch_fd"])
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.set_wakeup_fd(-1)
        os.chdir(cfg["cwd"])
        drop_capabilities()
        os.execvpe(cfg["argv"][0], cfg["argv"], cfg["env"])
    except FileNotFoundError:
        sys.stderr.write(f"longrun sandbox: command not found: {cfg['argv'][0]!r}\n")
        os._exit(127)
    except BaseException as exc:
        sys.stderr.write(f"longrun sandbox: cannot start {cfg['argv'][0]!r}: {exc}\n")
        os._exit(126)
    os._exit(126)


def supervise(child: int, watch_fd: int, wake_fd: int) -> int:
    while True:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return 126
            if pid == 0:
                break
            if pid == child:
                return os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)
        try:
            ready, _, _ = select.select([watch_fd, wake_fd], [], [])
        except InterruptedError:
            continue
        if watch_fd in ready and os.read(watch_fd, 1) == b"":
            return 137  # the worker is gone: end everything
        if wake_fd in ready:
            with contextlib.suppress(BlockingIOError):
                os.read(wake_fd, 512)


def wait_for_network(ready_fd: int, go_fd: int) -> None:
    """Say the namespaces exist, then wait until the worker has attached the user-mode network
    (EOF instead of a byte: the worker gave up, so nothing runs)."""
    os.write(ready_fd, b"1")
    os.close(ready_fd)
    if os.read(go_fd, 1) != b"1":
        raise SetupError("the worker did not set up the network")
    os.close(go_fd)


def main() -> None:
    cfg = json.loads(sys.argv[1])
    try:
        root = build_root(cfg)
        pivot(root)
        os.makedirs(cfg["env"]["HOME"], mode=0o700, exist_ok=True)
        loopback_up()
        with contextlib.suppress(OSError):
            socket.sethostname("longrun-sandbox")
        if "net_go_fd" in cfg:
            wait_for_network(cfg["net_ready_fd"], cfg["net_go_fd"])
    except (SetupError, OSError) as exc:
        sys.stderr.write(f"longrun sandbox: setup failed: {exc}\n")
        os._exit(125)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    child = run_child(cfg)
    code = supervise(child, cfg["watch_fd"], wake_r)
    sys.stdout.flush()
    os._exit(code)


if __name__ == "__main__":
    try:
        main()
    except Exception as exc:  # pid 1 reports and ends; it never hangs the command's caller
        sys.stderr.write(f"longrun sandbox: {exc}\n")
        os._exit(125)
