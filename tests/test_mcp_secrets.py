"""The canary test, for MCP servers: a stdio server's environment and an HTTP server's header
hold canary secrets from the worker's environment, and both servers answer a tool call with the
secrets they were given (a careless server). Afterwards no canary is in any model request, the
transcript, the audit, the state history, the stored listing or the run's spec; and the model did
see the redaction markers, so the secrets did travel through the servers.

One canary is secret-shaped (`sk-ant-...`, which the pattern redactor knows); the other is plain
random letters that no pattern recognises: only the MCP client's scrubbing of the values it was
given catches that one. The history of the run's workflow holds neither, nor the servers' text."""

from __future__ import annotations

import json

import pytest

from longrun.mcp.registry import listing_sha256
from longrun.models.blocks import ToolResultBlock
from longrun.models.spec import RunSpec
from longrun.workflows.base import SHAPE_PATCH
from tests.support.harness import running_worker
from tests.support.mcp_policy import McpAgent
from tests.support.mcp_servers import http_config, http_server, stdio_config, worker_settings
from tests.test_replay import decoded_history
from tests.test_secrets import _rnd, leaks

pytestmark = pytest.mark.slow


async def test_mcp_server_secrets_never_reach_the_model_transcript_or_audit(
    store, temporal_client, tmp_path, monkeypatch
):
    c = {"anthropic_key": "sk-ant-api03-" + _rnd(48), "plain": "Qx" + _rnd(30)}
    monkeypatch.setenv("LONGRUN_TEST_MCP_ENV_SECRET", c["plain"])
    monkeypatch.setenv("LONGRUN_TEST_MCP_AUTH", "Bearer " + c["anthropic_key"])
    ws, state = tmp_path / "ws", tmp_path / "state"
    ws.mkdir()
    state.mkdir()
    agent = McpAgent(plan=[
        [("mcp__local__leak_credentials", {}), ("mcp__remote__leak_credentials", {})],
        [("set_next_action", {"next_action": "stop"})],
    ])
    with http_server(state, "Bearer " + c["anthropic_key"]) as url:
        spec = RunSpec(objective="Check which credentials the servers use.", workspace=str(ws), approvers=["alice"],
                       mcp_servers=[{"name": "local", "read_only_tools": ["leak_credentials"]},
                                    {"name": "remote", "read_only_tools": ["leak_credentials"]}])
        settings = worker_settings(
            stdio_config("local", state, env={"MCP_TEST_SECRET": "LONGRUN_TEST_MCP_ENV_SECRET"}),
            http_config("remote", url, headers={"Authorization": "LONGRUN_TEST_MCP_AUTH"}),
        )
        async with running_worker(temporal_client, store, provider=agent, settings=settings) as h:
            run_id = await h.start(spec)
            result = await h.result(run_id)
            history = await h.client.get_workflow_handle(run_id).fetch_history()
    assert result.status == "completed", result.reason

    requests = {f"request {i}": r.model_dump_json() for i, r in enumerate(agent.requests)}
    transcript = {f"transcript {e.seq}": json.dumps(e.message.model_dump(mode="json")) for e in store.transcript(run_id)}
    audit = {f"audit {r.seq} {r.kind}": json.dumps(r.event.model_dump(mode="json")) for r in store.audit(run_id)}
    states = {f"state v{v.version}": v.state.model_dump_json() + v.reason for v in store.state_history(run_id)}
    final = store.load_state(run_id)
    sha = listing_sha256(final)
    assert sha is not None
    stored = {"listing": store.get_artifact(sha).decode(), "runs.spec": store.get_run(run_id).spec.model_dump_json(),
              "workflow history": decoded_history(history)}
    artifacts = {f"artifact {r.artifact_sha256}": store.get_artifact(r.artifact_sha256).decode()
                 for r in (x.event for x in store.audit(run_id)) if getattr(r, "kind", "") == "tool_ran"}
    found = leaks({**requests, **transcript, **audit, **states, **stored, **artifacts}, c)
    assert found == [], f"canaries leaked: {found}"

    seen = " ".join(transcript.values())
    assert seen.count("[REDACTED:mcp_secret]") >= 2, "both servers' answers reached the transcript, scrubbed"
    assert "started with [REDACTED:mcp_secret] and " in seen, "the stdio server's env value, scrubbed"
    assert " and Bearer [REDACTED:mcp_secret]" in seen or " and [REDACTED:mcp_secret]" in seen, "the header's value"
    assert '"name":"remote"' in stored["runs.spec"], "the spec names the server"
    assert "LONGRUN_TEST_MCP_AUTH" not in stored["runs.spec"], "the variables are the worker's configuration"
    [local] = [b.content for e in store.transcript(run_id) for b in e.message.content
               if isinstance(b, ToolResultBlock) and b.tool_use_id == "toolu_m001_0"]
    assert "environment: " in local and " MCP_TEST_SECRET " in local
    assert "LONGRUN_TEST_MCP" not in local, "the stdio server gets what its configuration names, not the worker's environment"
    history_text = stored["workflow history"]
    assert SHAPE_PATCH in history_text and "longrun.list_mcp_tools" in history_text, "the run listed its tools behind the patch"
    assert "Say which credentials this server runs with" not in history_text, "descriptions stay in Postgres"
