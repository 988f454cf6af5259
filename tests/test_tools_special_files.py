"""No reader blocks on a FIFO, a socket or a device in the workspace (issue 24, finding 3).

`mkfifo src/cache.txt` by an allowed command made read_file, grep and write_file's fingerprint
block in `open()` forever, each holding one of the worker's activity threads. Every reader now
opens with O_NONBLOCK|O_NOFOLLOW and accepts regular files only. Each call here runs in a daemon
thread with a bound, so a regression fails the test instead of hanging it; the bound is generous
and says nothing about speed.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from longrun.client.approval_view import _diff
from longrun.errors import ToolError
from longrun.tools import default_registry
from longrun.tools.base import ToolContext
from longrun.tools.fs_tools import tree_fingerprint

REG = default_registry()
BOUND = 30.0
"""Seconds a call may take before the test calls it blocked (a blocked open never returns)."""
T = TypeVar("T")


def promptly(fn: Callable[[], T]) -> T:
    """`fn()` in a daemon thread: its value or its exception, or a failure when it is still
    blocked after BOUND seconds (the thread is left behind; the fixture unblocks it)."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # handed to the test below
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(BOUND)
    assert not thread.is_alive(), "the call blocked (a FIFO opened for reading waits for a writer forever)"
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("cache = 'src/cache.txt'\n")
    os.mkfifo(root / "src" / "cache.txt")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(root / "src" / "app.sock"))
    os.symlink("cache.txt", root / "src" / "cache-link.txt")  # a link inside, to the FIFO
    try:
        yield root
    finally:
        server.close()
        for _ in range(8):  # release any reader a regression left blocked on the FIFO
            with contextlib.suppress(OSError):
                os.close(os.open(root / "src" / "cache.txt", os.O_WRONLY | os.O_NONBLOCK))


def ctx(ws: Path) -> ToolContext:
    return ToolContext(run_id="r", workspace=ws, action_id="r/t1/c0")


def run(name: str, args: dict[str, Any], ws: Path) -> str:
    tool = REG.get(name)
    assert tool.run is not None
    return promptly(lambda: tool.run(args, ctx(ws))).text  # type: ignore[misc]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("path", ["src/cache.txt", "src/app.sock", "src/cache-link.txt"])
def test_read_file_refuses_a_special_file_at_once(ws: Path, path: str) -> None:
    with pytest.raises(ToolError, match="not a regular file") as caught:
        run("read_file", {"path": path}, ws)
    assert "FIFO" in str(caught.value) or "socket" in str(caught.value)


@pytest.mark.timeout(120)
def test_grep_and_glob_skip_special_files(ws: Path) -> None:
    out = run("grep", {"pattern": "cache"}, ws)
    assert out.splitlines() == ["src/app.py:1:cache = 'src/cache.txt'"]
    with pytest.raises(ToolError, match="not a regular file"):
        run("grep", {"pattern": "x", "path": "src/cache.txt"}, ws)
    listing = run("glob", {"pattern": "src/**"}, ws)
    assert "src/app.py" in listing and "cache" not in listing and "app.sock" not in listing
    assert "[skipped 3 special file(s)" in listing, "the FIFO, the socket, and the link to the FIFO"


@pytest.mark.timeout(120)
def test_effect_fingerprints_and_checks_do_not_block(ws: Path) -> None:
    write = REG.get("write_file")
    assert write.fingerprint is not None and write.check is not None
    assert promptly(lambda: write.fingerprint({"path": "src/cache.txt", "content": "x"}, ctx(ws))) == "special:FIFO"  # type: ignore[misc]
    patch = REG.get("apply_patch")
    assert patch.check is not None
    refusal = promptly(lambda: patch.check({"path": "src/cache.txt", "old": "a", "new": "b"}, ctx(ws)))  # type: ignore[misc]
    assert refusal and "not a regular file" in refusal
    diff = "--- a/src/cache.txt\n+++ b/src/cache.txt\n@@ -1 +1 @@\n-a\n+b\n"
    refusal = promptly(lambda: patch.check({"diff": diff}, ctx(ws)))  # type: ignore[misc]
    assert refusal and "not a regular file" in refusal
    tree = promptly(lambda: tree_fingerprint(ws / "src"))
    assert tree.startswith("tree:")
    delete = REG.get("delete_path")
    assert delete.fingerprint is not None
    assert promptly(lambda: delete.fingerprint({"path": "src/cache.txt"}, ctx(ws))) == "special:FIFO"  # type: ignore[misc]
    # write_file replaces the FIFO with a regular file, as it replaces any file
    assert "wrote 6 bytes" in run("write_file", {"path": "src/cache.txt", "content": "plain\n"}, ws)
    assert (ws / "src" / "cache.txt").read_text() == "plain\n"


@pytest.mark.timeout(120)
def test_the_approval_view_does_not_block_on_a_fifo(ws: Path) -> None:
    diff, note = promptly(lambda: _diff("write_file", {"path": "src/cache.txt", "content": "x\n"}, ws))
    assert diff is None and note and "not a regular file" in note
    diff, note = promptly(lambda: _diff("delete_path", {"path": "src/cache.txt"}, ws))
    assert diff is None and note and "not a regular file" in note


# --- a whole run: the worker's activity threads are never held ----------------------------------

FIFO_PLAN = [
    [("read_file", {"path": "src/cache.txt"})],
    [("grep", {"pattern": "cache"})],
    [("glob", {"pattern": "src/**"})],
    [("set_next_action", {"next_action": "edit"})],
    [("write_file", {"path": "src/cache.txt", "content": "plain\n"})],  # approval view and fingerprint
    [("set_next_action", {"next_action": "stop"})],
]


@pytest.mark.slow
@pytest.mark.timeout(240)
async def test_a_run_over_a_fifo_completes_and_the_approver_gets_an_answer(
    store: Any, temporal_client: Any, ws: Path,
) -> None:
    from longrun.client import decide
    from longrun.client.approval_view import approval_view
    from longrun.models.spec import RunSpec
    from tests.support.harness import running_worker
    from tests.support.policy import PlanProvider

    provider = PlanProvider(plan=FIFO_PLAN)
    async with running_worker(temporal_client, store, provider=provider) as h:
        try:
            run_id = await h.start(RunSpec(objective="Look at the cache.", workspace=str(ws), approvers=["alice"]))
            pending = (await h.wait_for(run_id, lambda s: s.status == "waiting_approval")).pending_approval
            view = promptly(lambda: approval_view(store, run_id, pending.approval_id))
            assert view.diff is None and view.diff_note and "is a FIFO, not a regular file" in view.diff_note
            await decide.approve(h.client, run_id, pending.approval_id, "alice", store=store)
            result = await h.result(run_id, timeout=90)
        finally:  # on a regression, free the threads blocked on the FIFO so the worker can stop
            for _ in range(8):
                with contextlib.suppress(OSError):
                    os.close(os.open(ws / "src" / "cache.txt", os.O_WRONLY | os.O_NONBLOCK))
    assert result.status == "completed", result.reason
    results = [b for m in provider.requests[-1].messages for b in m.content if getattr(b, "type", "") == "tool_result"]
    read, grep, glob = (str(b.content) for b in results[:3])
    assert results[0].is_error and "'src/cache.txt' is a FIFO, not a regular file" in read
    assert "src/app.py:1:" in grep and "cache.txt:" not in grep.replace("src/cache.txt'", "")
    assert "[skipped 3 special file(s)" in glob
    assert (ws / "src" / "cache.txt").read_text() == "plain\n", "the approved write replaced the FIFO"
    intents = [e for e in store.all_effects(run_id) if e.tool == "write_file"]
    assert [e.before for e in intents] == ["special:FIFO"]
