"""A run with MCP tools replays: its history (the `mcp-tools` patch, the listing activity, a read
call and an approved effect) replays against AgentRunWorkflow, and holds none of the servers'
text (descriptions, output). `tests/histories/agent_run_mcp_tools.json` is such a history, written
by this test with LONGRUN_RECORD_HISTORIES=1; `tests/test_replay.py` replays it with the others."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory

from longrun.client import decide
from longrun.models.spec import RunSpec
from longrun.workflows.agent_run import AgentRunWorkflow
from longrun.workflows.base import SHAPE_PATCH
from tests.support.harness import running_worker
from tests.support.mcp_policy import McpAgent
from tests.support.mcp_servers import stdio_config, worker_settings
from tests.test_replay import decoded_history, replayer

pytestmark = pytest.mark.slow

STORED = Path(__file__).parent / "histories" / "agent_run_mcp_tools.json"


async def test_an_mcp_run_replays_and_its_history_holds_no_server_text(store, temporal_client, tmp_path):
    ws, state = tmp_path / "ws", tmp_path / "state"
    ws.mkdir()
    state.mkdir()
    agent = McpAgent(plan=[
        [("@search_logs", {"query": "ERROR"})],
        [("set_next_action", {"next_action": "edit"})],
        [("@create_ticket", {"title": "db pool exhausted"})],
        [("set_next_action", {"next_action": "stop"})],
    ])
    spec = RunSpec(objective="Open a ticket for the errors.", workspace=str(ws), approvers=["alice"],
                   mcp_servers=[{"name": "logs", "read_only_tools": ["search_logs"]}])
    async with running_worker(temporal_client, store, provider=agent,
                              settings=worker_settings(stdio_config("logs", state))) as h:
        run_id = await h.start(spec)
        pending = (await h.wait_for(run_id, lambda s: s.status == "waiting_approval")).pending_approval
        await decide.approve(h.client, run_id, pending.approval_id, "alice", store=store)
        assert (await h.result(run_id)).status == "completed"
        fresh = await h.client.get_workflow_handle(run_id).fetch_history()
    if os.environ.get("LONGRUN_RECORD_HISTORIES"):
        STORED.write_text(fresh.to_json())
    text = decoded_history(fresh)
    assert SHAPE_PATCH in text and "longrun.list_mcp_tools" in text
    for server_text in ("Open a ticket in the tracker", "Log lines that contain", "connection refused (pool exhausted)",
                        "ticket T-1 opened"):
        assert server_text not in text, f"{server_text!r} is in the workflow history"
    histories = [fresh]
    if STORED.exists():
        histories.append(WorkflowHistory.from_json(STORED.stem, json.loads(STORED.read_text())))
    for history in histories:
        await replayer(AgentRunWorkflow).replay_workflow(history)
