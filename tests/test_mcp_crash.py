"""A worker killed with kill -9 while an MCP server is in the middle of an approved effect: the
ticket reached the server, the worker died before the answer, Temporal retries the call on a new
worker. No MCP server can be asked whether a call happened, so the retry's reconcile is
undecidable: the effect stays `unknown`, the run asks a human, and the ticket is not opened a
second time. A tool the spec declares idempotent is called again instead (two tickets, as the
declaration allows) and the run completes. The workers, each in its own process, read the server
from the configuration file LONGRUN_MCP_CONFIG names, as a deployed worker does."""

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

from longrun.client import calls as client_calls
from longrun.client import decide
from longrun.models.spec import RunSpec
from longrun.models.state import EffectStatus
from tests.support.harness import Harness
from tests.support.mcp_servers import stdio_config

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
PLAN = [
    [["set_next_action", {"next_action": "edit"}]],
    [["@slow_ticket", {"title": "db pool exhausted", "seconds": 8}]],
    [["set_next_action", {"next_action": "stop"}]],
]


def spawn_worker(db_url: str, address: str, task_queue: str, log: Path, mcp_config: Path) -> subprocess.Popen:
    with open(log, "a") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "tests.support.mcp_worker_proc", db_url, address, task_queue, json.dumps(PLAN)],
            cwd=REPO, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "LONGRUN_MCP_CONFIG": str(mcp_config)},
        )


def write_config(path: Path, state: Path) -> Path:
    """The workers' MCP configuration: the test server as `tracker`, over stdio (a JSON file)."""
    entry = stdio_config("tracker", state).model_dump(exclude={"name"})
    path.write_text(json.dumps({"servers": {"tracker": entry}}))
    return path


async def wait_until(predicate, timeout: float, what: str) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        if predicate():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def tickets(state: Path) -> list[str]:
    path = state / "tickets.txt"
    return path.read_text().splitlines() if path.exists() else []


async def kill_mid_call(store, db_url, temporal_env, tmp_path, **declared):
    """Approve the slow ticket, kill -9 the worker once the server wrote it, go on with a new worker.
    Returns (harness, run_id, state folder, the second worker)."""
    state = tmp_path / "server-state"
    state.mkdir()
    ws = tmp_path / "ws"
    ws.mkdir()
    task_queue = f"mcp-crash-{uuid.uuid4().hex[:8]}"
    address = temporal_env.client.service_client.config.target_host
    config = write_config(tmp_path / "mcp.json", state)
    first = spawn_worker(db_url, address, task_queue, tmp_path / "worker1.log", config)
    h = Harness(temporal_env.client, store, task_queue)
    spec = RunSpec(objective="Open a ticket.", workspace=str(ws), approvers=["alice"],
                   mcp_servers=[{"name": "tracker", **declared}])
    try:
        run_id = await h.start(spec)
        pending = (await h.wait_for(run_id, lambda s: s.status == "waiting_approval", timeout=60)).pending_approval
        await decide.approve(h.client, run_id, pending.approval_id, "alice", store=store)
        await wait_until(lambda: tickets(state) == ["db pool exhausted"], 60, "the ticket to reach the server")
        os.kill(first.pid, signal.SIGKILL)
        first.wait(10)
    finally:
        if first.poll() is None:
            first.kill()
    [effect] = store.all_effects(run_id)
    assert effect.status is EffectStatus.unknown, "the kill left the effect unknown"
    return h, run_id, state, spawn_worker(db_url, address, task_queue, tmp_path / "worker2.log", config)


async def test_a_worker_killed_mid_mcp_effect_leaves_it_to_a_human_and_never_repeats_it(
    store, db_url, temporal_env, tmp_path
):
    h, run_id, state, second = await kill_mid_call(store, db_url, temporal_env, tmp_path)
    try:
        paused = await h.wait_for(run_id, lambda s: s.status == "paused", timeout=90, what="the run to ask a human")
        assert "cannot be asked whether mcp__tracker__slow_ticket ran" in paused.reason
        [effect] = store.all_effects(run_id)
        assert effect.status is EffectStatus.unknown and effect.attempts == 2
        assert tickets(state) == ["db pool exhausted"], "the undecidable effect was not run again"
        await client_calls.control(h.client, run_id, "cancel")
        await h.result(run_id)
    finally:
        second.kill()
        second.wait(10)


async def test_an_idempotent_mcp_effect_runs_again_after_the_kill(store, db_url, temporal_env, tmp_path):
    h, run_id, state, second = await kill_mid_call(store, db_url, temporal_env, tmp_path,
                                                    idempotent_tools=["slow_ticket"])
    try:
        result = await h.result(run_id, timeout=120)
    finally:
        second.kill()
        second.wait(10)
    assert result.status == "completed", result.reason
    assert tickets(state) == ["db pool exhausted"] * 2, "declared idempotent: the call ran again"
    [effect] = store.all_effects(run_id)
    assert effect.status is EffectStatus.confirmed and effect.attempts == 2
