"""kill -9 of the worker during a git-backed edit: after the file is written and before its commit
(with a stale `index.lock`, as a `git add` killed midway leaves), and after the commit but before
the effect is settled. Either way the run completes on a fresh worker and the edit is exactly one
commit on the run's branch: reconcile asks git whether the commit is there, and a confirmed edit
without one is committed then."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from longrun.models.audit import ChangeCommitted, ChangeSetOpened, EffectSettled
from longrun.models.spec import RunSpec
from longrun.models.state import EffectStatus
from longrun.workspace.git import git
from tests.support.harness import Harness
from tests.test_git_changeset import make_repo

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
PLAN = [
    [["set_next_action", {"next_action": "edit"}]],
    [["write_file", {"path": "notes/today.txt", "content": "written once\n"}]],
    [["set_next_action", {"next_action": "stop"}]],
]


def spawn(db_url: str, address: str, queue: str, phase: str, pause: float, marker: Path, home: Path,
          log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "LONGRUN_HOME": str(home)}
    with open(log, "a") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "tests.support.git_worker_proc", db_url, address, queue, json.dumps(PLAN), phase,
             str(pause), str(marker)], cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)


async def wait_for_file(path: Path, timeout: float) -> None:
    for _ in range(int(timeout / 0.05)):
        if path.exists():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {path}")


@pytest.mark.parametrize("phase", ["after-write", "after-commit"])
async def test_kill_9_during_a_git_backed_edit_leaves_exactly_one_commit(store, db_url, temporal_env, tmp_path,
                                                                          phase):
    repo = make_repo(tmp_path / "repo")
    queue = f"gitcrash-{uuid.uuid4().hex[:8]}"
    address = temporal_env.client.service_client.config.target_host
    marker = tmp_path / "paused"
    first = spawn(db_url, address, queue, phase, 60.0, marker, tmp_path / "home", tmp_path / "w1.log")
    second = None
    try:
        h = Harness(temporal_env.client, store, queue)
        run_id = await h.start(RunSpec(objective="write the notes", workspace=str(repo)))
        await wait_for_file(marker, 60)
        os.kill(first.pid, signal.SIGKILL)
        first.wait(10)
        assert [e.status for e in store.all_effects(run_id)] == [EffectStatus.unknown]
        second = spawn(db_url, address, queue, phase, 0.0, tmp_path / "unused", tmp_path / "home", tmp_path / "w2.log")
        result = await h.result(run_id, timeout=120)
    finally:
        for proc in (first, second):
            if proc and proc.poll() is None:
                proc.kill()
                proc.wait(10)
    assert result.status == "completed", result.reason
    events = [r.event for r in store.audit(run_id)]
    tree = Path(next(e for e in events if isinstance(e, ChangeSetOpened)).worktree)
    branch = f"longrun/{run_id}"
    subjects = git(repo, "log", "--format=%s", f"main..{branch}").splitlines()
    assert len(subjects) == 1, f"exactly one commit for the edit, got {subjects}"
    assert subjects[0].startswith("write_file: ")
    action = store.all_effects(run_id)[0].action_id
    assert git(repo, "log", "-1", "--format=%(trailers:key=Longrun-Action,valueonly)", branch).strip() == action
    assert (tree / "notes/today.txt").read_text() == "written once\n"
    assert git(tree, "status", "--porcelain") == "", "nothing left uncommitted in the worktree"
    settled = [e for e in events if isinstance(e, EffectSettled)]
    assert [(e.status, e.how) for e in settled] == [("confirmed", "reconciled")]
    committed = [e for e in events if isinstance(e, ChangeCommitted)]
    assert [(e.how, e.action_id) for e in committed] == [("reconciled", action)], \
        "the audit hears of the commit once, from the reconcile (the killed worker never wrote it)"
    assert store.verify_chain(run_id).ok
