"""A generation of a run starts with one `start_run` activity, not `load_run`, `record_run_tools`
and `open_change_set` one after another (issue 26: round trips per run; a subagent is a short
run, so each of its starts paid the three). What the three did still happens: the tool list is
recorded once with its hash in the task state, a later generation records nothing again, and the
run goes on to completion. A run with MCP servers keeps the old order (tests/test_mcp.py); a git
workspace gets its change set from `start_run` (tests/test_git_changeset.py,
tests/test_git_replay.py)."""

from __future__ import annotations

import pytest
from temporalio.api.enums.v1 import EventType

from longrun.models.audit import ChangeSetOpened
from longrun.models.spec import RunSpec
from longrun.tools.recorded import list_sha256
from tests.support.harness import running_worker
from tests.support.policy import PlanProvider

pytestmark = pytest.mark.slow

TURNS = 5


async def _activities(client, run_id: str) -> list[list[str]]:
    """The activity names each generation of the run scheduled."""
    out = []
    async for wf in client.list_workflows(f"WorkflowId = '{run_id}'"):
        events = [e async for e in client.get_workflow_handle(run_id, run_id=wf.run_id).fetch_history_events()]
        out.append([e.activity_task_scheduled_event_attributes.activity_type.name for e in events
                    if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED])
    return out


async def test_each_generation_starts_with_one_activity_and_the_tool_list_is_recorded_once(store, temporal_client,
                                                                                           tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("a\n")
    provider = PlanProvider(plan=[[("read_file", {"path": "a.txt"})]] * TURNS)
    async with running_worker(temporal_client, store, provider=provider) as h:
        run_id = await h.start(RunSpec(objective="read it a few times", workspace=str(ws), continue_as_new_every=2))
        result = await h.result(run_id, timeout=120)
    assert result.status == "completed" and result.turns == TURNS + 1
    generations = await _activities(temporal_client, run_id)
    assert len(generations) >= 3, generations
    for names in generations:
        assert names[0] == "longrun.start_run", names
        assert not {"longrun.load_run", "longrun.record_run_tools", "longrun.open_change_set"} & set(names), names
    tools = store.run_tools(run_id)
    assert tools and any(t.name == "read_file" for t in tools)
    history = store.state_history(run_id)
    assert [v.reason for v in history].count("tools recorded") == 1, [v.reason for v in history]
    assert store.load_state(run_id).tools_sha256 == list_sha256(tools)
    assert not any(isinstance(r.event, ChangeSetOpened) for r in store.audit(run_id)), "not a git workspace"
