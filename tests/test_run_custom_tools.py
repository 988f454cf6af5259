"""Custom tools on the real stack (issue 27, items 2 and 3): a worker loads a read tool and an
effect tool made with `@longrun.tool`; a run uses both, gets a scope and an edit-at-approval for
the effect tool, and records its tool list. A worker that lacks a recorded tool, or has another
tool under its name, fails the call with what to do and never runs it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from longrun.client import decide
from longrun.client.approval_view import approval_view, render_view
from longrun.errors import ConfigError
from longrun.models.audit import ScopeUsed
from longrun.models.blocks import ToolResultBlock
from longrun.models.spec import RunSpec
from longrun.service.worker import build_worker
from longrun.tools.loading import with_custom_tools
from longrun.tools.recorded import list_sha256
from longrun.tools.registry import default_registry
from tests.support import custom_tools
from tests.support.harness import running_worker
from tests.support.policy import PlanProvider

pytestmark = pytest.mark.slow

PLAN = [
    [("lookup_ticket", {"ticket": "T-1"})],
    [("set_next_action", {"next_action": "edit"})],
    [("write_notes", {"path": "notes/a.md", "text": "Fixed T-1.\n"})],   # asks; approved with an edit
    [("write_notes", {"path": "notes/b.md", "text": "Second.\n"})],     # covered by the scope
    [("set_next_action", {"next_action": "stop"})],
]


def tool_results(store, run_id: str) -> list[ToolResultBlock]:
    return [b for e in store.transcript(run_id) for b in e.message.content if isinstance(b, ToolResultBlock)]


def result_text(block: ToolResultBlock) -> str:
    return str(block.model_dump())


async def test_a_run_uses_custom_tools_with_a_scope_and_an_edit(store, temporal_client, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    registry = with_custom_tools(default_registry(), custom_tools.TOOLS)
    async with running_worker(temporal_client, store, provider=PlanProvider(plan=PLAN), registry=registry) as h:
        run_id = await h.start(RunSpec(objective="Write the release notes.", workspace=str(ws), approvers=["alice"]))
        pending = (await h.wait_for(run_id, lambda s: s.status == "waiting_approval")).pending_approval
        assert pending.tool == "write_notes"

        view = approval_view(store, run_id, pending.approval_id)
        assert view.diff is not None and "+Fixed T-1." in view.diff, "show diffs the declared content"
        assert "notes/a.md does not exist yet" in (view.diff_note or "")
        assert "diff against the file as it is now:" in "\n".join(render_view(view, ["alice"]))

        scope_id, answer = await decide.grant_scope(h.client, store, run_id, "alice", tools=["write_notes"],
                                                    paths=["notes/**"], max_uses=1, ttl_seconds=3600)
        assert answer.startswith(f"granted {scope_id}: write_notes on notes/**")
        with pytest.raises(Exception, match=r"cannot be scoped \(choose from .*write_notes"):
            await decide.grant_scope(h.client, store, run_id, "alice", tools=["lookup_ticket"], paths=["**"],
                                     max_uses=1, ttl_seconds=3600)
        with pytest.raises(Exception, match="not valid for write_notes: .*'text' must be string"):
            await decide.approve(h.client, run_id, pending.approval_id, "alice", store=store, edit={"text": 3})
        await decide.approve(h.client, run_id, pending.approval_id, "alice", store=store,
                          edit={"text": "Fixed T-1: login works again.\n"})
        assert (await h.result(run_id)).status == "completed"

    assert (ws / "notes/a.md").read_text() == "Fixed T-1: login works again.\n", "the edited call ran"
    assert (ws / "notes/b.md").read_text() == "Second.\n"
    assert "T-1: login page returns 500" in result_text(tool_results(store, run_id)[0]), "the read tool ran"
    uses = [r.event for r in store.audit(run_id) if isinstance(r.event, ScopeUsed)]
    assert [(u.scope_id, u.path) for u in uses] == [(scope_id, "notes/b.md")]
    recorded = store.run_tools(run_id)
    assert recorded is not None
    by_name = {t.name: t for t in recorded}
    assert (by_name["lookup_ticket"].source, by_name["lookup_ticket"].kind) == ("custom", "read")
    assert (by_name["write_notes"].path_arg, by_name["write_notes"].content_arg) == ("path", "text")
    assert by_name["read_file"].source == "builtin"
    assert store.load_state(run_id).tools_sha256 == list_sha256(recorded)


MISSING_PLAN = [
    [("lookup_ticket", {"ticket": "T-2"})],
    [("set_next_action", {"next_action": "edit"})],
    [("write_notes", {"path": "notes/a.md", "text": "Fixed T-2.\n"})],  # approved on a worker with another write_notes
    [("lookup_ticket", {"ticket": "T-1"})],                             # a worker without lookup_ticket
    [("set_next_action", {"next_action": "stop"})],
]


async def test_a_worker_without_a_recorded_tool_fails_the_call_and_runs_no_other(store, temporal_client, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    first = with_custom_tools(default_registry(), custom_tools.TOOLS)
    async with running_worker(temporal_client, store, provider=PlanProvider(plan=MISSING_PLAN), registry=first) as h:
        run_id = await h.start(RunSpec(objective="Write the release notes.", workspace=str(ws), approvers=["alice"]))
        pending = (await h.wait_for(run_id, lambda s: s.status == "waiting_approval")).pending_approval
        queue = h.task_queue
    other = with_custom_tools(default_registry(), [custom_tools.write_notes_v2])
    async with running_worker(temporal_client, store, provider=PlanProvider(plan=MISSING_PLAN), registry=other,
                              task_queue=queue) as h:
        await decide.approve(h.client, run_id, pending.approval_id, "alice", store=store)
        assert (await h.result(run_id, timeout=180)).status == "completed"

    assert not (ws / "notes/a.md").exists(), "no other tool ran under the recorded name"
    texts = [result_text(b) for b in tool_results(store, run_id)]
    assert any("this worker's 'write_notes' is not the tool run" in t and "earlier version" in t for t in texts), texts
    assert any("tool 'lookup_ticket' is not run" in t and "does not offer it" in t and "--tools" in t
               for t in texts), texts


async def test_a_custom_tool_taking_a_taken_name_is_refused_at_start(store, temporal_client, tmp_path):
    with pytest.raises(ConfigError, match="'read_file' has the name of a built-in tool; rename it"):
        build_worker(temporal_client, store, tools=custom_tools.COLLIDING)
    with pytest.raises(ConfigError, match=r"starts with 'mcp__', which names the tools of MCP servers \(mcp__SERVER__TOOL\); rename it"):
        build_worker(temporal_client, store, tools=[custom_tools.shadow_mcp])
    env = {**os.environ, "LONGRUN_HOME": str(tmp_path / "home")}
    done = subprocess.run([sys.executable, "-m", "longrun.cli", "worker", "--tools",
                           "tests.support.custom_tools:COLLIDING"], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode != 0
    assert "'read_file' has the name of a built-in tool; rename it" in done.stderr + done.stdout
