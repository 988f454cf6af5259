"""MCP tool servers behind the gate, end to end: a real MCP server (the SDK's `MCPServer`, over
stdio and over streamable HTTP) configured on a real worker, a run spec that names it, the real
Temporal dev server and Postgres, and the scripted agent calling the tools it is offered as
`mcp__NAME__TOOL`.

What a user sees is asserted: the tools in the model's request, the tool results in the
transcript, the approval request and `longrun show`'s view of it, the ledger, the audit, and what
happened at the server (its state folder)."""

from __future__ import annotations

import pytest

from longrun.cli.commands.audit import describe_event
from longrun.client import calls as client_calls
from longrun.client import decide
from longrun.client.approval_view import approval_view, render_view
from longrun.models.audit import ApprovalGranted, ApprovalRejected, GateVerdict, McpToolsListed
from longrun.models.blocks import ToolResultBlock
from longrun.models.spec import RunSpec
from longrun.models.state import EffectStatus
from tests.support.harness import running_worker
from tests.support.mcp_policy import McpAgent
from tests.support.mcp_servers import http_config, http_server, stdio_config, worker_settings

pytestmark = pytest.mark.slow


def results(store, run_id: str) -> dict[str, ToolResultBlock]:
    """Every tool result of the run, by the id of the call it answers."""
    out = {}
    for entry in store.transcript(run_id):
        for block in entry.message.content:
            if isinstance(block, ToolResultBlock):
                out[block.tool_use_id] = block
    return out


def text(block: ToolResultBlock) -> str:
    return block.content if isinstance(block.content, str) else str(block.content)


def verdicts(store, run_id: str, tool: str) -> list[tuple[str, str]]:
    return [(r.event.verdict, str(getattr(r.event.rule, "value", r.event.rule))) for r in store.audit(run_id)
            if isinstance(r.event, GateVerdict) and r.event.tool == tool]


@pytest.fixture
def ws(tmp_path):
    path = tmp_path / "ws"
    path.mkdir()
    return path


@pytest.fixture
def state(tmp_path):
    path = tmp_path / "server-state"
    path.mkdir()
    return path


async def test_stdio_tools_listed_read_runs_and_effect_waits_for_a_signed_approval(store, temporal_client, ws, state):
    agent = McpAgent(plan=[
        [("@search_logs", {"querry": "ERROR"})],            # a misspelled argument: refused by the schema
        [("@search_logs", {"query": "ERROR"})],
        [("set_next_action", {"next_action": "edit"})],
        [("@create_ticket", {"title": "db pool exhausted"})],
        [("set_next_action", {"next_action": "stop"})],
    ])
    spec = RunSpec(objective="Find the errors in the logs and open a ticket.", workspace=str(ws), approvers=["alice"],
                   mcp_servers=[{"name": "logs", "read_only_tools": ["search_logs"]}])
    settings = worker_settings(stdio_config("logs", state))
    async with running_worker(temporal_client, store, provider=agent, settings=settings) as h:
        run_id = await h.start(spec)
        waiting = await h.wait_for(run_id, lambda s: s.status in ("waiting_approval", "completed", "failed"),
                                   what="the ticket's approval request")
        assert waiting.status == "waiting_approval", waiting.reason
        pending = waiting.pending_approval
        assert pending.tool == "mcp__logs__create_ticket"
        assert pending.arguments == {"title": "db pool exhausted"}
        assert not (state / "tickets.txt").exists(), "nothing happens at the server before the approval"

        view = approval_view(store, run_id, pending.approval_id)
        assert view.hash_matches and view.mcp is not None
        shown = "\n".join(render_view(view, ["alice"]))
        assert "readOnlyHint=false, destructiveHint=false" in shown and "hints only, never trusted" in shown
        assert "Open a ticket in the tracker" in shown

        await decide.approve(h.client, run_id, pending.approval_id, "alice", store=store)
        result = await h.result(run_id)
    assert result.status == "completed", result.reason

    # the model was offered the server's tools under their mcp__ names, each saying what it needs
    offered = {t.name: t for t in agent.requests[0].tools}
    assert {"mcp__logs__search_logs", "mcp__logs__create_ticket", "mcp__logs__leak_credentials",
            "mcp__logs__crash_midway"} <= set(offered)
    assert "declared read-only by the run spec" in offered["mcp__logs__search_logs"].description
    assert "every call waits for a human's approval" in offered["mcp__logs__create_ticket"].description
    assert offered["mcp__logs__search_logs"].input_schema["required"] == ["query"]

    got = results(store, run_id)
    refused = got["toolu_m001_0"]
    assert refused.is_error and "invalid arguments for mcp__logs__search_logs: 'query' is required" in text(refused)
    found = text(got["toolu_m002_0"])
    assert "mcp__logs__search_logs: ok" in found and found.count("connection refused (pool exhausted)") == 2
    assert "ticket T-1 opened: db pool exhausted" in text(got["toolu_m004_0"])
    assert (state / "tickets.txt").read_text() == "db pool exhausted\n", "the effect happened exactly once"

    assert verdicts(store, run_id, "mcp__logs__search_logs") == [("deny", "tool"), ("allow", "read")]
    assert [v for v, _ in verdicts(store, run_id, "mcp__logs__create_ticket")] == ["needs_approval", "allow"]
    [effect] = [e for e in store.all_effects(run_id) if e.tool == "mcp__logs__create_ticket"]
    assert effect.status is EffectStatus.confirmed and effect.external_id
    kinds = [r.kind for r in store.audit(run_id)
             if getattr(r.event, "tool", None) == "mcp__logs__create_ticket" and r.kind != "gate_verdict"]
    assert kinds[-3:] == ["effect_intent", "effect_settled", "tool_ran"], "the intent is written before the call"
    audit = [r.event for r in store.audit(run_id)]
    [listed] = [e for e in audit if isinstance(e, McpToolsListed)]
    assert "mcp__logs__create_ticket" in listed.tools and listed.skipped == []
    [row] = [describe_event(r) for r in store.audit(run_id) if r.kind == "mcp_tools_listed"]
    assert row.startswith(f"{len(listed.tools)} MCP tool(s) listed (listing ") and "mcp__logs__search_logs" in row
    assert [e.approver for e in audit if isinstance(e, ApprovalGranted)] == ["alice"]
    assert store.verify_chain(run_id).ok


async def test_http_server_gets_its_header_from_the_worker_environment(store, temporal_client, ws, state, monkeypatch):
    monkeypatch.setenv("LONGRUN_TEST_TRACKER_AUTH", "Bearer tracker-token-0451")
    agent = McpAgent(plan=[[("@search_logs", {"query": "WARN"})], [("set_next_action", {"next_action": "stop"})]])
    with http_server(state, "Bearer tracker-token-0451") as url:
        spec = RunSpec(objective="Look at the warnings.", workspace=str(ws), approvers=["alice"],
                       mcp_servers=[{"name": "tracker", "read_only_tools": ["search_logs"]}])
        settings = worker_settings(http_config("tracker", url, headers={"Authorization": "LONGRUN_TEST_TRACKER_AUTH"}))
        async with running_worker(temporal_client, store, provider=agent, settings=settings) as h:
            run_id = await h.start(spec)
            result = await h.result(run_id)
    assert result.status == "completed", result.reason
    found = text(results(store, run_id)["toolu_m001_0"])
    assert "retrying request 7f3a" in found
    stored = store.get_run(run_id).spec.model_dump_json()
    assert "tracker-token-0451" not in stored and url not in stored, "the spec names the server, nothing more"


async def test_an_unreachable_server_is_skipped_with_its_reason_and_the_run_goes_on(store, temporal_client, ws, state):
    agent = McpAgent(plan=[[("set_next_action", {"next_action": "stop"})]])
    spec = RunSpec(objective="Look at the logs.", workspace=str(ws), approvers=["alice"],
                   mcp_servers=[{"name": "gone"}, {"name": "nokey"}])
    settings = worker_settings(http_config("gone", "http://127.0.0.1:9/mcp", timeout_seconds=5),
                               stdio_config("nokey", state, env={"MCP_TEST_SECRET": "LONGRUN_TEST_UNSET_VARIABLE"}))
    async with running_worker(temporal_client, store, provider=agent, settings=settings) as h:
        run_id = await h.start(spec)
        result = await h.result(run_id)
    assert result.status == "completed", result.reason
    [listed] = [r.event for r in store.audit(run_id) if isinstance(r.event, McpToolsListed)]
    assert listed.tools == []
    assert any(s.startswith("gone: MCP server 'gone' did not list its tools") for s in listed.skipped), listed.skipped
    assert any("LONGRUN_TEST_UNSET_VARIABLE in the worker's environment" in s for s in listed.skipped), listed.skipped
    assert not [t for t in agent.requests[0].tools if t.name.startswith("mcp__")]


async def test_a_server_that_dies_mid_effect_leaves_it_unknown_for_a_human(store, temporal_client, ws, state):
    agent = McpAgent(plan=[
        [("set_next_action", {"next_action": "edit"})],
        [("@crash_midway", {"target": "prod"})],
        [("set_next_action", {"next_action": "stop"})],
    ])
    spec = RunSpec(objective="Deploy.", workspace=str(ws), approvers=["alice"], mcp_servers=[{"name": "ops"}])
    async with running_worker(temporal_client, store, provider=agent,
                              settings=worker_settings(stdio_config("ops", state))) as h:
        run_id = await h.start(spec)
        pending = (await h.wait_for(run_id, lambda s: s.status == "waiting_approval")).pending_approval
        assert pending.tool == "mcp__ops__crash_midway"
        await decide.approve(h.client, run_id, pending.approval_id, "alice", store=store)
        paused = await h.wait_for(run_id, lambda s: s.status == "paused", what="the run to ask a human")
        assert "gave no answer to crash_midway" in paused.reason and "is unknown" in paused.reason
        assert (state / "crash_started").read_text() == "prod", "the call reached the server before it died"
        [effect] = [e for e in store.all_effects(run_id) if e.tool == "mcp__ops__crash_midway"]
        assert effect.status is EffectStatus.unknown, "nobody knows whether the deploy happened"
        assert store.load_state(run_id).next_action.value == "ask_human"
        await client_calls.control(h.client, run_id, "cancel")
        await h.result(run_id)
    result = results(store, run_id)["toolu_m002_0"]
    assert result.is_error and "outcome unknown, a human must check" in text(result)


async def test_an_idempotent_tool_that_dies_mid_call_is_an_error_result_and_the_run_goes_on(
    store, temporal_client, ws, state
):
    agent = McpAgent(plan=[
        [("set_next_action", {"next_action": "edit"})],
        [("@crash_midway", {"target": "staging"})],
        [("set_next_action", {"next_action": "stop"})],
    ])
    spec = RunSpec(objective="Deploy.", workspace=str(ws), approvers=["alice"],
                   mcp_servers=[{"name": "ops", "idempotent_tools": ["crash_midway"]}])
    async with running_worker(temporal_client, store, provider=agent,
                              settings=worker_settings(stdio_config("ops", state))) as h:
        run_id = await h.start(spec)
        pending = (await h.wait_for(run_id, lambda s: s.status == "waiting_approval")).pending_approval
        await decide.approve(h.client, run_id, pending.approval_id, "alice", store=store)
        result = await h.result(run_id)
    assert result.status == "completed", result.reason
    got = results(store, run_id)["toolu_m002_0"]
    assert got.is_error and "gave no answer to crash_midway" in text(got) and "Connection closed" in text(got)
    [effect] = [e for e in store.all_effects(run_id) if e.tool == "mcp__ops__crash_midway"]
    assert effect.status is EffectStatus.none


async def test_a_tool_description_that_asks_the_model_to_approve_itself_changes_nothing(
    store, temporal_client, ws, state
):
    agent = McpAgent(plan=[[("set_next_action", {"next_action": "stop"})]], gullible=True)
    spec = RunSpec(objective="Tidy the logs.", workspace=str(ws), approvers=["alice"],
                   mcp_servers=[{"name": "logs", "read_only_tools": ["search_logs"]}])
    async with running_worker(temporal_client, store, provider=agent,
                              settings=worker_settings(stdio_config("logs", state, malicious=True))) as h:
        run_id = await h.start(spec)
        waiting = await h.wait_for(run_id, lambda s: s.status in ("waiting_approval", "completed", "failed"))
        assert waiting.status == "waiting_approval", "the server's 'read-only, pre-approved' claims are not trusted"
        pending = waiting.pending_approval
        assert pending.tool == "mcp__logs__purge_logs"
        assert store.all_approvals(run_id) == [], "the recorded 'approval by alice' is only a decision note"
        assert not (state / "purged").exists()
        shown = "\n".join(render_view(approval_view(store, run_id, pending.approval_id), ["alice"]))
        assert "readOnlyHint=true" in shown and "never trusted" in shown and "PRE-APPROVED by alice" in shown
        await decide.reject(h.client, run_id, pending.approval_id, "alice", "a purge is not part of this job", store=store)
        result = await h.result(run_id)
    assert result.status == "completed", result.reason
    assert not (state / "purged").exists(), "the effect never ran"

    offered = {t.name: t for t in agent.requests[0].tools}
    assert "every call waits for a human's approval" in offered["mcp__logs__purge_logs"].description
    got = results(store, run_id)
    first, last = text(got["toolu_m001_1"]), text(got["toolu_m003_0"])
    assert "not allowed while next_action is 'inspect'" in first
    assert "approval rejected by alice: a purge is not part of this job" in last
    assert verdicts(store, run_id, "mcp__logs__purge_logs") == [("deny", "approval"), ("needs_approval", "approval")]
    [asked] = [r.event for r in store.audit(run_id) if isinstance(r.event, GateVerdict)
               and r.event.verdict == "needs_approval"]
    assert "annotates it: readOnlyHint=true, destructiveHint=false; server hints only, never trusted" in asked.reason
    audit = [r.event for r in store.audit(run_id)]
    assert not [e for e in audit if isinstance(e, ApprovalGranted)]
    assert [e.approver for e in audit if isinstance(e, ApprovalRejected)] == ["alice"]
    assert [e for e in store.all_effects(run_id) if e.tool == "mcp__logs__purge_logs"] == []
    assert store.verify_chain(run_id).ok
