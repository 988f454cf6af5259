"""Replayer tests: histories recorded by this suite replay against AgentRunWorkflow without
non-determinism, and a deliberately changed workflow is rejected.

`tests/histories/*.json` are histories recorded by `record_history` below (set
LONGRUN_RECORD_HISTORIES=1 to refresh them); they guard against a change to the workflow that
would break runs already in flight. The test also records a fresh one and replays it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer
from temporalio.workflow import NondeterminismError

from longrun.models.spec import RunSpec
from longrun.service import client as api
from longrun.workflows.agent_run import AgentRunWorkflow
from tests.support.changed_workflow import ChangedAgentRunWorkflow
from tests.support.harness import running_worker
from tests.support.policy import PlanProvider

pytestmark = pytest.mark.slow

HISTORIES = Path(__file__).parent / "histories"
PLAN = [
    [("read_file", {"path": "hello.txt"}), ("write_note", {"text": "greeting has a typo"})],
    [("set_next_action", {"next_action": "edit"})],
    [("apply_patch", {"path": "hello.txt", "old": "helo", "new": "hello"})],
    [("set_next_action", {"next_action": "stop"})],
]


async def record_history(store, client, tmp_path) -> WorkflowHistory:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "hello.txt").write_text("helo world\n")
    async with running_worker(client, store, provider=PlanProvider(plan=PLAN)) as h:
        run_id = await h.start(RunSpec(objective="Fix the greeting.", workspace=str(ws), approvers=["alice"]))
        pending = (await h.wait_for(run_id, lambda s: s.status == "waiting_approval")).pending_approval
        await api.say(h.client, h.store, run_id, "keep the exclamation marks")
        await api.approve(h.client, run_id, pending.approval_id, "alice")
        result = await h.result(run_id)
        assert result.status == "completed"
        return await h.client.get_workflow_handle(run_id).fetch_history()


def replayer(workflow_cls) -> Replayer:
    return Replayer(workflows=[workflow_cls], data_converter=pydantic_data_converter)


async def test_recorded_histories_replay_and_a_changed_workflow_is_rejected(store, temporal_client, tmp_path):
    fresh = await record_history(store, temporal_client, tmp_path)
    if os.environ.get("LONGRUN_RECORD_HISTORIES"):
        HISTORIES.mkdir(exist_ok=True)
        (HISTORIES / "agent_run_approval.json").write_text(fresh.to_json())
    stored = [
        WorkflowHistory.from_json(p.stem, json.loads(p.read_text())) for p in sorted(HISTORIES.glob("*.json"))
    ]
    assert stored, "tests/histories holds at least one recorded history"
    for history in [fresh, *stored]:
        await replayer(AgentRunWorkflow).replay_workflow(history)
        with pytest.raises(NondeterminismError):
            await replayer(ChangedAgentRunWorkflow).replay_workflow(history)
