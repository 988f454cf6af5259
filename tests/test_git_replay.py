"""A run on a git workspace replays: its history (the `start-run` patch, whose activity opens the
change set; before it, the `git-change-sets` patch and the `open_change_set` activity; an approved
edit committed on the run's branch) replays against
AgentRunWorkflow and holds no file content, no commit id and no path of the worktree (the worktree,
branch and commits live in git and the audit, not in Temporal).
`tests/histories/agent_run_git_change_set.json` is such a history, written by this test with
LONGRUN_RECORD_HISTORIES=1; `tests/test_replay.py` replays it with the others."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory

from longrun.models.audit import ChangeCommitted
from longrun.models.spec import RunSpec
from longrun.workflows.agent_run import AgentRunWorkflow
from longrun.workflows.base import SHAPE_PATCH
from tests.support.harness import running_worker
from tests.support.policy import PlanProvider
from tests.test_git_changeset import approve_all, make_repo
from tests.test_replay import decoded_history, replayer

pytestmark = pytest.mark.slow

STORED = Path(__file__).parent / "histories" / "agent_run_git_change_set.json"
PLAN = [
    [("set_next_action", {"next_action": "edit"})],
    [("apply_patch", {"path": "hello.txt", "edits": [{"old": "helo", "new": "hello"}, {"old": "world", "new": "there"}]})],
    [("set_next_action", {"next_action": "stop"})],
]


async def test_a_git_change_set_run_replays_and_its_history_holds_no_git_detail(store, temporal_client, tmp_path,
                                                                                 monkeypatch):
    monkeypatch.setenv("LONGRUN_HOME", str(tmp_path / "home"))
    repo = make_repo(tmp_path / "repo")
    async with running_worker(temporal_client, store, provider=PlanProvider(plan=PLAN)) as h:
        run_id = await h.start(RunSpec(objective="fix the greeting", workspace=str(repo), approvers=["alice"]))
        await approve_all(h, store, run_id, 1)
        assert (await h.result(run_id)).status == "completed"
        fresh = await h.client.get_workflow_handle(run_id).fetch_history()
    if os.environ.get("LONGRUN_RECORD_HISTORIES"):
        STORED.write_text(fresh.to_json())
    text = decoded_history(fresh)
    # the change set is opened by `start_run` (the `start-run` patch); the stored history is of
    # the shape before it, with its own `open_change_set` activity, and replays below too
    assert SHAPE_PATCH in text and "longrun.start_run" in text and "longrun.open_change_set" not in text
    commit = next(r.event for r in store.audit(run_id) if isinstance(r.event, ChangeCommitted)).commit
    for detail in (commit, commit[:12], "worktrees", "hello there"):
        assert detail not in text, f"{detail!r} is in the workflow history"
    histories = [fresh]
    if STORED.exists():
        stored = WorkflowHistory.from_json(STORED.stem, json.loads(STORED.read_text()))
        assert "longrun.open_change_set" in decoded_history(stored)
        histories.append(stored)
    for history in histories:
        await replayer(AgentRunWorkflow).replay_workflow(history)
