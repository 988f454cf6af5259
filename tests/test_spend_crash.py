"""The spend ledger through a kill -9 (issue 28): a worker killed between the provider's answer
and the ledger write is counted exactly once; one killed before the answer was saved leaves the
lost request in the ledger (at its input estimate), never lost and never counted as two answers;
and the token cap, counted in the ledger, sees the answer the workflow only saw replayed."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from longrun.models.audit import ModelCalled
from longrun.models.spec import RunCaps, RunSpec
from tests.support.harness import Harness
from tests.support.spend_worker_proc import PRICE

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[1]


def spawn(db_url: str, address: str, queue: str, log: Path, kill_at: str, out: Path) -> subprocess.Popen[bytes]:
    with open(out, "a") as f:
        return subprocess.Popen([sys.executable, "-m", "tests.support.spend_worker_proc", db_url, address, queue,
                                 str(log), kill_at], cwd=REPO, stdout=f, stderr=subprocess.STDOUT)


async def crash_run(store, db_url, temporal_env, tmp_path: Path, kill_at: str, caps: RunCaps | None = None):
    queue = f"spend-{uuid.uuid4().hex[:8]}"
    address = temporal_env.client.service_client.config.target_host
    log = tmp_path / "calls.log"
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "hello.txt").write_text("hello\n")
    first = spawn(db_url, address, queue, log, kill_at, tmp_path / "w1.log")
    second = None
    try:
        h = Harness(temporal_env.client, store, queue)
        run_id = await h.start(RunSpec(objective="Read hello.txt.", workspace=str(ws), model="priced:v1",
                                       caps=caps or RunCaps(max_cost=50), in_place=True))
        deadline = asyncio.get_running_loop().time() + 90
        while first.poll() is None:
            assert asyncio.get_running_loop().time() < deadline, "the worker did not kill itself"
            await asyncio.sleep(0.1)
        assert first.returncode == -9, "killed with SIGKILL"
        second = spawn(db_url, address, queue, log, "none", tmp_path / "w2.log")
        result = await h.result(run_id, timeout=150)
        shown = await h.status(run_id)
        return run_id, result, [int(x) for x in log.read_text().split()], shown
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait(10)


@pytest.mark.timeout(300)
async def test_a_kill_between_the_answer_and_the_ledger_write_is_counted_once(store, db_url, temporal_env, tmp_path):
    run_id, result, calls, _ = await crash_run(store, db_url, temporal_env, tmp_path, "before-ledger")
    assert result.status == "completed", result.reason
    assert calls.count(1) == 1, "the answer was saved with its usage: the retry replays it, no second call"
    turn1 = [c for c in store.request_costs(run_id) if c.turn == 1]
    assert [(c.status, c.attempt) for c in turn1] == [("answered", 1)], "counted exactly once"
    answers = [e for e in store.transcript(run_id) if e.role == "assistant" and e.usage is not None]
    spend = store.family_spend(run_id)
    assert spend.requests == len(answers) and spend.unsettled == 0, "every answer in the ledger, once"
    assert float(spend.dollars) == pytest.approx(sum(PRICE.cost(e.usage) for e in answers), abs=1e-8)
    audited = {r.event.turn for r in store.audit(run_id) if isinstance(r.event, ModelCalled)}
    assert 1 not in audited, "the kill came before turn 1's model_called audit: the ledger has what the audit lacks"


@pytest.mark.timeout(300)
async def test_a_kill_before_the_answer_was_saved_keeps_the_lost_request(store, db_url, temporal_env, tmp_path):
    run_id, result, calls, _ = await crash_run(store, db_url, temporal_env, tmp_path, "after-answer")
    assert result.status == "completed", result.reason
    assert calls.count(1) == 2, "the answer died with the worker: the retry asked again"
    turn1 = [c for c in store.request_costs(run_id) if c.turn == 1]
    assert [(c.status, c.attempt) for c in turn1] == [("sent", 1), ("answered", 2)], "both requests are in the ledger"
    lost = turn1[0]
    assert lost.cost_usd is not None and lost.cost_usd > 0, "the lost request counts at its input estimate"
    spend = store.family_spend(run_id)
    answers = [e for e in store.transcript(run_id) if e.role == "assistant" and e.usage is not None]
    assert spend.unsettled == 1 and spend.requests == len(answers)
    assert float(spend.dollars) == pytest.approx(sum(PRICE.cost(e.usage) for e in answers) + lost.cost_usd, abs=1e-8)


@pytest.mark.timeout(300)
async def test_the_token_cap_counts_an_answer_replayed_after_a_kill(store, db_url, temporal_env, tmp_path):
    """Turn 1's answer is saved, then the worker dies; the retry replays it, so the workflow never
    adds its usage to `cursor.usage` (a counter in memory would let turn 2 call the model). The
    ledger has it: the run stops before turn 2's call, at the cap, with the ledger's count."""
    cap = 1_000  # the smallest cap; turn 1's request alone is more (asserted below)
    run_id, result, calls, shown = await crash_run(store, db_url, temporal_env, tmp_path, "before-ledger",
                                                   caps=RunCaps(max_tokens=cap))
    answers = [e for e in store.transcript(run_id) if e.role == "assistant" and e.usage is not None]
    assert len(answers) == 1 and answers[0].turn == 1
    used = answers[0].usage.total_input + answers[0].usage.output_tokens
    assert used >= cap, "turn 1 alone reaches the cap"
    assert store.run_spend([run_id])[run_id].tokens == used, "the ledger counts turn 1 once"
    assert shown.usage.total_input + shown.usage.output_tokens == 0, "the workflow's own counter never saw it"
    assert result.status == "failed" and result.reason == f"token cap reached ({used} of {cap} tokens)", result.reason
    assert calls == [1], "turn 1 was asked once (its retry replayed the answer), turn 2 never"
    assert shown.turn == 1 and shown.model_calls == 0
