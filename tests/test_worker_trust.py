"""Whatever a worker executes or connects to is configured on the worker; a run spec only names it
(docs/SECURITY.md, "Trust boundaries"), so that starting a run never equals running code on a
worker. Shown with a real worker, the real Temporal dev server and Postgres:

- a spec that defines an MCP server's command (the old `--mcp NAME=stdio:CMD`) is refused by
  `longrun start` and by the spec model, and a worker handed one anyway (a run stored by an older
  version, or written past the client) runs nothing: the marker file the command would create
  never appears, and the audit says to configure the server on the worker;
- a spec naming a server the worker does not offer gets it skipped, with the servers the worker
  offers and how to configure one (a spec naming a configured server: tests/test_mcp.py);
- `sandbox: none` is refused unless the worker allows it (LONGRUN_ALLOW_UNSANDBOXED=1);
- an `openai-compatible` base URL the worker does not allow is refused before any request is sent.
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from pathlib import Path

import psycopg
import pytest
from pydantic import ValidationError

from longrun.context.opening import opening_message
from longrun.context.tokens import estimate_message
from longrun.errors import ConfigError
from longrun.models.audit import McpToolsListed, ToolRan
from longrun.models.io import AgentRunInput
from longrun.models.spec import RunSpec, model_key
from longrun.providers import get_provider
from longrun.service.settings import Settings
from longrun.store import libpq_url
from longrun.workflows.agent_run import AgentRunWorkflow
from tests.fake_openai import FakeOpenAI
from tests.support.harness import running_worker
from tests.support.mcp_policy import McpAgent
from tests.support.policy import PlanProvider

pytestmark = pytest.mark.slow


def pwned_command(marker: Path) -> str:
    return f"sh -c 'touch {marker}'"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    return tmp_path / f"pwned-{uuid.uuid4().hex}"


def test_longrun_start_refuses_an_mcp_command_in_the_spec_and_says_to_configure_it_on_the_worker(ws, marker):
    from longrun.cli import build_parser
    from longrun.cli.commands.common import CliError
    from longrun.cli.commands.start import build_spec

    argv = ["start", "--objective", "o", "--workspace", str(ws), "--approver", "alice",
            "--mcp", f"x=stdio:{pwned_command(marker)}"]
    with pytest.raises(CliError, match="configure it on the worker") as err:
        build_spec(build_parser().parse_args(argv))
    assert "LONGRUN_MCP_X" in str(err.value) and "nothing was started" in str(err.value)
    with pytest.raises(ValidationError, match="configure it on the worker"):
        RunSpec(objective="o", workspace=str(ws), mcp_servers=[
            {"name": "x", "transport": "stdio", "command": ["sh", "-c", f"touch {marker}"]}])
    with pytest.raises(ValidationError, match="configure it on the worker"):
        RunSpec(objective="o", workspace=str(ws), mcp_servers=[
            {"name": "x", "transport": "http", "url": "http://127.0.0.1:9/mcp"}])
    assert not marker.exists()


async def start_with_stored_spec(h, store, db_url: str, spec: RunSpec, stored: dict) -> str:
    """Start a run whose `runs.spec` row holds `stored` (what an older version wrote, or a writer
    that went around the client), as the schema owner can."""
    run_id = f"run-{uuid.uuid4().hex[:12]}"
    message = opening_message(spec)
    store.create_run(run_id, spec, opening=message, opening_token_estimate=estimate_message(message))
    with psycopg.connect(libpq_url(db_url), autocommit=True) as conn:
        conn.execute("UPDATE runs SET spec = %s::jsonb WHERE run_id = %s", (json.dumps(stored), run_id))
    await h.client.start_workflow(AgentRunWorkflow.run, AgentRunInput(run_id=run_id), id=run_id,
                                  task_queue=h.task_queue)
    return run_id


async def test_a_worker_runs_no_mcp_command_from_a_stored_spec(store, db_url, temporal_client, ws, marker):
    agent = McpAgent(plan=[[("set_next_action", {"next_action": "stop"})]])
    spec = RunSpec(objective="Look at the logs.", workspace=str(ws), approvers=["alice"])
    stored = spec.model_dump(mode="json")
    stored["mcp_servers"] = [{"name": "x", "transport": "stdio", "command": ["sh", "-c", f"touch {marker}"],
                              "read_only_tools": ["search"]}]
    async with running_worker(temporal_client, store, provider=agent) as h:
        run_id = await start_with_stored_spec(h, store, db_url, spec, stored)
        result = await h.result(run_id)
    assert not marker.exists(), "the command in the spec ran on the worker"
    assert result.status == "completed", result.reason
    [listed] = [r.event for r in store.audit(run_id) if isinstance(r.event, McpToolsListed)]
    assert listed.tools == []
    [why] = listed.skipped
    assert why.startswith("x: ") and "configure it on the worker" in why and "LONGRUN_MCP_X" in why, why
    assert "offers no MCP server" in why, why
    assert store.verify_chain(run_id).ok


async def test_a_server_the_worker_does_not_offer_is_skipped_with_what_it_offers(store, temporal_client, ws, tmp_path):
    from tests.support.mcp_servers import stdio_config, worker_settings

    agent = McpAgent(plan=[[("set_next_action", {"next_action": "stop"})]])
    spec = RunSpec(objective="Look.", workspace=str(ws), approvers=["alice"], mcp_servers=[{"name": "tracker"}])
    settings = worker_settings(stdio_config("logs", tmp_path))
    async with running_worker(temporal_client, store, provider=agent, settings=settings) as h:
        run_id = await h.start(spec)
        result = await h.result(run_id)
    assert result.status == "completed", result.reason
    [listed] = [r.event for r in store.audit(run_id) if isinstance(r.event, McpToolsListed)]
    [why] = listed.skipped
    assert "this worker does not offer MCP server 'tracker'" in why and "it offers: logs" in why, why
    assert "LONGRUN_MCP_TRACKER" in why and "LONGRUN_MCP_CONFIG" in why, why


@pytest.mark.parametrize("allowed", [False, True])
async def test_sandbox_none_runs_only_where_the_worker_allows_it(store, temporal_client, ws, allowed):
    plan = PlanProvider(plan=[[("run_command", {"argv": ["touch", "ran-unsandboxed"]})],
                              [("set_next_action", {"next_action": "stop"})]])
    spec = RunSpec(objective="Touch a file.", workspace=str(ws), approvers=["alice"], sandbox="none",
                   allowed_commands=[["touch", "ran-unsandboxed"]])
    settings = dataclasses.replace(Settings.from_env(), allow_unsandboxed=allowed)
    async with running_worker(temporal_client, store, provider=plan, settings=settings) as h:
        run_id = await h.start(spec)
        result = await h.result(run_id)
    ran = [r.event for r in store.audit(run_id) if isinstance(r.event, ToolRan) and r.event.tool == "run_command"]
    if allowed:
        assert result.status == "completed", result.reason
        assert (ws / "ran-unsandboxed").exists() and ran
        return
    assert result.status == "failed"
    assert "sandbox: none" in result.reason and "LONGRUN_ALLOW_UNSANDBOXED=1" in result.reason, result.reason
    assert not (ws / "ran-unsandboxed").exists() and ran == []
    assert plan.requests == [], "refused before the first model call"


async def test_an_openai_compatible_base_url_the_worker_does_not_allow_gets_no_request(store, temporal_client, ws,
                                                                                     monkeypatch):
    monkeypatch.delenv("LONGRUN_OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("LONGRUN_ALLOWED_BASE_URLS", raising=False)
    with FakeOpenAI() as fake:
        spec = RunSpec(objective="Review.", workspace=str(ws), approvers=["alice"], model="openai-compatible:qwen3",
                       base_url=fake.url)
        async with running_worker(temporal_client, store) as h:
            run_id = await h.start(spec)
            result = await h.result(run_id)
        assert fake.requests == [], "the worker connected to a server the spec named"
        url = fake.url
    assert result.status == "failed"
    assert url in result.reason and "LONGRUN_ALLOWED_BASE_URLS" in result.reason, result.reason


def test_get_provider_refuses_a_base_url_outside_the_allow_list():
    key = model_key("openai-compatible:qwen3", base_url="http://10.0.0.9:8000/v1")
    with pytest.raises(ConfigError, match="LONGRUN_ALLOWED_BASE_URLS"):
        get_provider(key, allowed_base_urls=("http://127.0.0.1:11434/v1",))
    ok = get_provider(key, allowed_base_urls=("http://10.0.0.9:8000/v1/",))
    assert ok.name.startswith("openai-compatible:")
