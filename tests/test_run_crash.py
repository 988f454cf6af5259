"""A worker process killed with kill -9 in the middle of an effectful tool call: the run
completes on a new worker, the effect is applied exactly once (counted at its target), and the
unknown effect is reconciled before anything else happens."""

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

from longrun.models.spec import RunSpec
from longrun.models.state import EffectStatus
from tests.support.harness import Harness
from tests.support.sink import Sink

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
PLAN = [
    [["send_message", {"text": "first"}]],
    [["send_message", {"text": "second"}]],
    [["set_next_action", {"next_action": "stop"}]],
]


def spawn_worker(
    db_url: str, address: str, task_queue: str, sink: Sink, pause: float, log: Path, mode: str = "reconcile"
) -> subprocess.Popen:
    with open(log, "a") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "tests.support.worker_proc", db_url, address, task_queue, sink.url,
             json.dumps(PLAN), str(pause), mode],
            cwd=REPO,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


async def wait_until(predicate, timeout: float, what: str) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        if predicate():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


async def crash_run(store, db_url, temporal_env, tmp_path, mode: str):
    """Start a run, kill -9 its worker right after the first send reached the sink, finish the
    run on a fresh worker. Returns (run_id, result, sink counts)."""
    sink = Sink()
    task_queue = f"crash-{uuid.uuid4().hex[:8]}"
    address = temporal_env.client.service_client.config.target_host
    first = spawn_worker(db_url, address, task_queue, sink, 30.0, tmp_path / "worker1.log", mode)
    second = None
    try:
        h = Harness(temporal_env.client, store, task_queue)
        ws = tmp_path / "ws"
        ws.mkdir()
        run_id = await h.start(RunSpec(objective="tell the team", workspace=str(ws)))
        await wait_until(lambda: len(sink.deliveries) == 1, 60, "the first send to reach the sink")
        os.kill(first.pid, signal.SIGKILL)
        first.wait(10)
        state = store.load_state(run_id)
        assert [e.status for e in state.effects] == [EffectStatus.unknown], "the kill left an unknown effect"
        second = spawn_worker(db_url, address, task_queue, sink, 0.0, tmp_path / "worker2.log", mode)
        result = await h.result(run_id, timeout=120)
        return run_id, result, sink.counts()
    finally:
        for proc in (first, second):
            if proc and proc.poll() is None:
                proc.kill()
                proc.wait(10)
        sink.close()


async def test_kill_9_during_an_effect_applies_it_exactly_once(store, db_url, temporal_env, tmp_path):
    run_id, result, counts = await crash_run(store, db_url, temporal_env, tmp_path, "reconcile")
    assert result.status == "completed", result.reason
    assert sorted(counts.values()) == [1, 1], f"each effect exactly once at the target, got {counts}"
    state = store.load_state(run_id)
    assert state.effects == [], "settled effects left the state, in the write that settled them"
    effects = store.all_effects(run_id, state)
    assert [e.status for e in effects] == [EffectStatus.confirmed, EffectStatus.confirmed]
    assert effects[0].attempts == 2 and effects[0].external_id == "msg-1"
    assert [r.item_id for r in store.closed_items(run_id, "effect")] == [e.action_id for e in effects]

    events = [(r.kind, r.event) for r in store.audit(run_id)]
    first_action = effects[0].action_id
    settled = next(i for i, (k, e) in enumerate(events) if k == "effect_settled" and e.action_id == first_action)
    assert events[settled][1].how == "reconciled"
    retry = next(i for i, (k, e) in enumerate(events) if k == "effect_intent" and e.attempt == 2)
    assert retry < settled
    between = [k for k, _e in events[retry + 1 : settled]]
    assert between == [], f"nothing happens between the retry and the reconciliation, got {between}"
    assert store.verify_chain(run_id).ok


async def test_control_without_reconciliation_sends_twice(store, db_url, temporal_env, tmp_path):
    """The harness can see the bug it guards against: with a reconcile that always says "did not
    happen", the retry after the kill delivers the first message a second time."""
    _run_id, result, counts = await crash_run(store, db_url, temporal_env, tmp_path, "no-reconcile")
    assert result.status == "completed"
    assert sorted(counts.values()) == [1, 2], f"the control must duplicate the first send, got {counts}"
