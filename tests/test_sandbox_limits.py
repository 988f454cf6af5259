"""The sandbox's bounds on disk, memory and processes (issue 24, finding 6), on both backends.

The review saw a command spool 300 MiB of stdout onto the worker's disk although only 200k
characters are read back, each tmpfs of the sandbox take up to half the RAM, and 300 processes
spawned without a stop. Here each bound is set small through `SandboxPolicy` (as the worker's
settings would) and a command runs into it.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from longrun.tools import commands, sandbox_limits
from longrun.tools import sandbox as sb
from longrun.tools.sandbox import SandboxPolicy
from tests.support.sandbox import BACKENDS, PY, run_python, skip_unless

MiB = 1024 * 1024


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    w = tmp_path / "ws"
    w.mkdir()
    return w


FLOOD = "import sys\nchunk = b'x' * (1 << 20)\nfor _ in range(100):\n    sys.stdout.buffer.write(chunk)\nprint('done', file=sys.stderr)"


@pytest.mark.timeout(120)
@pytest.mark.parametrize("backend", [*BACKENDS, pytest.param("none", id="none")])
def test_a_stdout_flood_is_cut_before_it_reaches_the_worker_disk(ws: Path, backend: sb.Backend) -> None:
    """100 MiB on stdout: what the worker keeps (its spool file) stays under the cap, and the
    result says how much the command wrote and that it was cut."""
    if backend != "none":
        skip_unless(backend)
    policy = SandboxPolicy(mode=backend)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        done = sb.execute([PY, "-c", FLOOD], workspace=ws, policy=policy, timeout=60, stdout=out, stderr=err,
                          keep_bytes=commands.MAX_OUTPUT_BYTES + 4)
        spooled = out.seek(0, os.SEEK_END)
        err.seek(0)
        said = err.read().decode()
    assert done.code == 0 and "done" in said, (done, said)
    assert spooled <= commands.MAX_OUTPUT_BYTES + 4, f"{spooled} bytes of stdout spooled on the worker's disk"
    assert done.stdout_bytes == 100 * MiB
    text = run_python(ws, FLOOD, policy, timeout=60).text
    assert f"[truncated: {100 * MiB} bytes, showing the first {commands.MAX_OUTPUT_BYTES}]" in text, text[-500:]


FILL = """
import errno, os
for d in {dirs!r}:
    try:
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, 'big'), 'wb') as f:
            for _ in range(24):
                f.write(b'x' * (1 << 20))
                f.flush()
        print('FILLED', d)
    except OSError as exc:
        print('STOPPED', d, errno.errorcode.get(exc.errno, exc.errno))
"""


@pytest.mark.timeout(120)
@pytest.mark.parametrize("backend", BACKENDS)
def test_every_tmpfs_of_the_sandbox_stops_at_its_size(ws: Path, backend: sb.Backend) -> None:
    skip_unless(backend)
    hidden = [h for h in sb.worker_homes() if Path(h).is_dir() and not ws.is_relative_to(h)]
    dirs = ["/tmp", "/var/tmp", "/run", "/dev/shm", sb.SANDBOX_HOME, *hidden[:1]]
    policy = SandboxPolicy(mode=backend, tmpfs_mb=8, memory_mb=512)
    text = run_python(ws, FILL.format(dirs=dirs), policy).text
    for d in dirs:
        assert f"STOPPED {d} ENOSPC" in text, text
    assert "FILLED" not in text, text
    # /dev itself (the sandbox's own) is read-only: nothing lands in it
    text = run_python(ws, FILL.format(dirs=["/dev"]), policy).text
    assert "STOPPED /dev EROFS" in text, text


@pytest.mark.timeout(120)
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_big_write_in_the_workspace_stops_at_the_file_size_limit(ws: Path, backend: sb.Backend) -> None:
    skip_unless(backend)
    outcome = run_python(ws, FILL.format(dirs=["big-out"]), SandboxPolicy(mode=backend, file_mb=4))
    assert "STOPPED big-out EFBIG" in outcome.text, outcome.text
    assert (ws / "big-out" / "big").stat().st_size <= 4 * MiB
    assert outcome.sandbox is not None and "files up to 4 MiB" in outcome.sandbox, outcome.sandbox


BOMB = """
import errno, os, time
spawned, error = 0, None
for _ in range(300):
    try:
        pid = os.fork()
    except OSError as exc:
        error = errno.errorcode.get(exc.errno, exc.errno)
        break
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    spawned += 1
print('SPAWNED', spawned, error)
"""


@pytest.mark.timeout(120)
@pytest.mark.parametrize("cgroup", [pytest.param(True, id="cgroup"), pytest.param(False, id="rlimit-only")])
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_fork_bomb_stops_at_the_task_limit(ws: Path, backend: sb.Backend, cgroup: bool) -> None:
    skip_unless(backend)
    if cgroup and (why := sandbox_limits.cgroup_unavailable()) is not None:
        pytest.skip(f"no cgroup for commands on this machine: {why}")
    if not cgroup and os.getuid() == 0:
        pytest.skip("RLIMIT_NPROC does not bind the host's root (the kernel exempts uid 0): as root only the "
                    "cgroup stops a fork bomb, and status says when there is none")
    outcome = run_python(ws, BOMB, SandboxPolicy(mode=backend, tasks=32, cgroup=cgroup))
    line = next((x for x in outcome.text.splitlines() if x.startswith("SPAWNED ")), outcome.text)
    _, spawned, error = line.split()
    assert int(spawned) < 32 and error == "EAGAIN", outcome.text
    assert outcome.sandbox is not None and "32 tasks" in outcome.sandbox, outcome.sandbox


def test_describe_says_which_limits_are_in_force() -> None:
    policy = SandboxPolicy(memory_mb=256, file_mb=4, tmpfs_mb=8, tasks=32, cgroup=False)
    line = sb.describe("unshare", policy)
    assert line.startswith("unshare (no network; ")
    for part in ("memory 256 MiB per process", "files up to 4 MiB", "tmpfs 8 MiB each", "32 tasks",
                 "no cgroup (turned off by the worker's settings)"):
        assert part in line, line
