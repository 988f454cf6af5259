"""Audit completeness: after the workflow is deleted from Temporal (as retention does to closed
histories), the whole timeline of the run is rebuilt from Postgres alone and verifies: the store
gives back every audit event, transcript entry and state version it had, and `longrun audit RUN
--verify` (a subprocess, Postgres only) prints the same timeline and a verified chain, and
re-verifies the signature of alice's approval against her registered key."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.workflowservice.v1 import DeleteWorkflowExecutionRequest
from temporalio.service import RPCError, RPCStatusCode

from longrun.client import decide
from longrun.models.spec import RunSpec
from longrun.store import Store
from longrun.tools import default_registry
from tests.support.harness import running_worker
from tests.support.policy import PlanProvider
from tests.support.sink import Sink, send_tool

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
PLAN = [
    [("read_file", {"path": "notes.txt"})],
    [("write_note", {"text": "notes.txt says hello"})],
    [("record_decision", {"summary": "tell the team", "reason": "they asked for updates"})],
    [("send_message", {"text": "hello from the audit test"})],
    [("set_next_action", {"next_action": "edit"})],
    [("write_file", {"path": "reply.txt", "content": "sent\n"})],  # needs alice's signed approval
    [("set_next_action", {"next_action": "stop"})],
]


def _snapshot(store: Store, run_id: str) -> dict:
    return {
        "audit": [(r.seq, r.kind, r.event.model_dump(mode="json"), r.hash) for r in store.audit(run_id)],
        "transcript": [(e.seq, e.message.model_dump(mode="json"), e.hash) for e in store.transcript(run_id)],
        "states": [(v.version, v.state.model_dump(mode="json"), v.hash) for v in store.state_history(run_id)],
    }


async def _delete_from_temporal(client, run_id: str) -> None:
    await client.workflow_service.delete_workflow_execution(
        DeleteWorkflowExecutionRequest(namespace=client.namespace, workflow_execution=WorkflowExecution(workflow_id=run_id))
    )
    last = None
    for _ in range(180):  # deletion is asynchronous: the dev server takes about 30 s
        try:
            last = await client.get_workflow_handle(run_id).describe()
        except RPCError as exc:
            if exc.status == RPCStatusCode.NOT_FOUND:
                return
            raise
        await asyncio.sleep(0.5)
    raise AssertionError(f"Temporal still has {run_id} after the delete: {last and last.status}")


async def test_the_timeline_is_rebuilt_from_postgres_after_temporal_forgets_the_run(
    store, db_url, temporal_client, tmp_path
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("hello\n")
    sink = Sink()
    registry = default_registry()
    registry.register(send_tool(sink.url))
    try:
        async with running_worker(temporal_client, store, provider=PlanProvider(plan=PLAN), registry=registry) as h:
            run_id = await h.start(RunSpec(objective="read, decide, tell the team", workspace=str(ws),
                                           approvers=["alice"]))
            pending = (await h.wait_for(run_id, lambda s: s.status == "waiting_approval")).pending_approval
            await decide.approve(h.client, run_id, pending.approval_id, "alice", store=store)
            result = await h.result(run_id)
    finally:
        sink.close()
    assert result.status == "completed", result.reason
    before = _snapshot(store, run_id)

    await _delete_from_temporal(temporal_client, run_id)

    with Store.from_url(db_url) as fresh:  # a new connection: nothing cached from the run
        after = _snapshot(fresh, run_id)
        verdict = fresh.verify_chain(run_id)
        state = fresh.load_state(run_id)
        effects = fresh.all_effects(run_id, state)
        record = fresh.get_run(run_id)
    assert after == before
    assert verdict.ok, str(verdict)
    kinds = [k for _s, k, _e, _h in after["audit"]]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
    for kind in ("model_called", "gate_verdict", "effect_intent", "effect_settled", "tool_ran"):
        assert kind in kinds, f"{kind} missing from the audit log"
    assert record.status == "completed" and record.reason == result.reason
    assert [(e.tool, e.status.value, e.attempts) for e in effects] == [
        ("send_message", "confirmed", 1), ("write_file", "confirmed", 1)]
    assert [d.summary for d in state.decisions] == ["tell the team"]
    assert len(after["transcript"]) == 1 + 2 * len(PLAN) + 1  # opening, call + result per turn, final report

    # the CLI, in its own process, from Postgres alone (Temporal's address points nowhere)
    env = {**os.environ, "LONGRUN_DATABASE_URL": db_url, "TEMPORAL_ADDRESS": "127.0.0.1:1",
           "LONGRUN_HOME": str(tmp_path / "home")}
    proc = subprocess.run([sys.executable, "-m", "longrun.cli", "audit", run_id, "--verify", "--json"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["verify"]["ok"] is True
    assert out["decisions"] == {"ok": True, "checked": 1, "problems": []}, "the signature re-verified from Postgres"
    shown = [row for row in out["timeline"] if row.get("source") == "audit"]
    assert [row["kind"] for row in shown] == kinds
