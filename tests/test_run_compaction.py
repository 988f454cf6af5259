"""Compaction triggers and failures in real runs (real PostgreSQL, the real Temporal dev server, a
plan provider replaying fixed tool calls), asserted on the audit a user reads:

- a stage boundary is a `complete_stage` that succeeded, not one whose tool refused it;
- a boundary on the turn right after a compaction is asked again on the next turn, not dropped;
- a stage boundary below the target still clears old results when that frees `clear_at_least`;
- a compaction that raises inside the pipeline, or whose activity fails after its retries (a
  database that refuses the write), is audited `failed` and the run goes on uncompacted, every
  request still fitted under the hard limit.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import longrun.activities.model as model_activities
from longrun.errors import StoreUnavailable
from longrun.models.audit import CompactionDone, CompactionStarted, ModelCalled, ToolRan
from longrun.models.provider import ModelRequest
from longrun.models.spec import ContextPolicy, RunSpec
from longrun.store import Store
from tests.support.faults import FaultyStore, raising
from tests.support.harness import running_worker
from tests.support.policy import PlanProvider

pytestmark = pytest.mark.slow

LINES = 150
"""Lines of each big file: its read_file result is about 3.9k tokens."""
_STEP = re.compile(r"^toolu_p(\d+)_")


class StepPlan(PlanProvider):
    """A plan provider that reads its step from the newest tool use's id, so a request that hard
    enforcement or a summary shortened does not replay the plan from an earlier step."""

    def step(self, request: ModelRequest) -> int:
        steps = [int(m.group(1)) for msg in request.messages for b in msg.content
                 if (m := _STEP.match(getattr(b, "id", "") or ""))]
        return max(steps, default=0)


def big_files(ws: Path, n: int) -> None:
    for k in range(1, n + 1):
        (ws / f"big{k}.txt").write_text("".join(
            f"BIG{k} line {i:04d}: ledger total {i * 7} reconciled against invoice batch {i % 13}\n" for i in range(LINES)
        ))


def workspace(tmp_path: Path, n: int) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    big_files(ws, n)
    return ws


def read(k: int) -> tuple[str, dict[str, Any]]:
    return ("read_file", {"path": f"big{k}.txt"})


STOP = [("set_next_action", {"next_action": "stop"})]


async def run_plan(client, store: Store, ws: Path, plan: list[Any], policy: ContextPolicy, *,
                   worker_store: Store | None = None) -> tuple[str, Any, StepPlan]:
    provider = StepPlan(plan=plan)
    async with running_worker(client, worker_store or store, provider=provider) as h:
        run_id = await h.start(RunSpec(objective="Survey the ledger files.", workspace=str(ws), context=policy))
        result = await h.result(run_id)
    return run_id, result, provider


def events(store: Store, run_id: str, kind: type) -> list[Any]:
    return [r.event for r in store.audit(run_id) if isinstance(r.event, kind)]


def started(store: Store, run_id: str) -> list[tuple[str, int]]:
    return [(e.trigger, e.turn) for e in events(store, run_id, CompactionStarted)]


async def test_a_failed_complete_stage_is_no_boundary_and_a_boundary_after_a_compaction_is_deferred(
    store, temporal_client, tmp_path
):
    """Turn 1 calls complete_stage with a blank summary (the tool refuses it): no boundary. The
    commit of turn 2 is over the trigger: a threshold compaction. Turn 3 completes the stage: its
    commit falls on the turn right after that compaction, so the boundary waits, and the commit of
    turn 4 asks for it again."""
    ws = workspace(tmp_path, 2)
    plan = [
        [read(1), ("complete_stage", {"summary": "   "})],
        [read(2)],
        [("complete_stage", {"summary": "survey done: both ledgers read"})],
        [("write_note", {"text": "ledger totals reconcile"})],
        STOP,
    ]
    policy = ContextPolicy(trigger=9_000, target_ratio=0.95, keep=1, clear_at_least=500)
    run_id, result, _ = await run_plan(temporal_client, store, ws, plan, policy)
    assert result.status == "completed", result.reason
    stages = [e.is_error for e in events(store, run_id, ToolRan) if e.tool == "complete_stage"]
    assert stages == [True, False], "the first complete_stage was refused by its tool, the second succeeded"
    done = {(e.report.trigger, e.report.outcome) for e in events(store, run_id, CompactionDone)}
    assert ("threshold", "applied") in done, f"the threshold compaction after turn 2 was applied: {done}"
    assert started(store, run_id) == [("threshold", 2), ("stage_boundary", 4)], (
        "no boundary for the refused complete_stage (turn 1); the one of turn 3, right after the compaction of "
        "turn 2, fired with the commit of turn 4"
    )
    assert store.verify_chain(run_id).ok


async def test_a_stage_boundary_below_the_target_clears_old_results(store, temporal_client, tmp_path):
    """Three big results read, then complete_stage: far below the trigger, but clearing the older
    results frees more than clear_at_least, so the boundary compacts and the next request is
    smaller and no longer holds their text."""
    ws = workspace(tmp_path, 3)
    plan = [[read(1)], [read(2)], [read(3)], [("complete_stage", {"summary": "survey done: three ledgers read"})], STOP]
    policy = ContextPolicy(trigger=60_000, keep=1, clear_at_least=2_000)
    run_id, result, provider = await run_plan(temporal_client, store, ws, plan, policy)
    assert result.status == "completed", result.reason
    reports = [e.report for e in events(store, run_id, CompactionDone) if e.report.trigger == "stage_boundary"]
    assert len(reports) == 1, reports
    report = reports[0]
    assert report.tokens_before_calibrated < policy.effective_trigger(200_000) * policy.target_ratio, "below the target"
    assert report.outcome == "applied" and report.cleared_results >= 2, report
    assert report.tokens_before_calibrated - report.tokens_after_calibrated >= policy.clear_at_least, report
    calls = {e.turn: e.calibrated_tokens for e in events(store, run_id, ModelCalled)}
    assert calls[5] < calls[4], f"the request after the boundary is smaller: {calls}"
    after = [r for r in provider.requests if provider.step(r) == 4][-1]  # the request of turn 5
    text = "\n".join(str(b.model_dump()) for m in after.messages for b in m.content)
    assert "BIG1 line 0100" not in text and "BIG2 line 0100" not in text, "the older results were cleared"


async def test_a_compaction_that_raises_inside_the_pipeline_is_audited_failed_and_the_run_goes_on(
    store, temporal_client, tmp_path, monkeypatch
):
    """A bug inside the pipeline (here: `compact` raising, with a secret in its message): every
    compaction is audited started then failed, with the error redacted; no projection is stored;
    the run completes and every request was fitted under the hard limit at send time, though the
    transcript grew past it."""
    secret = "sk-ant-api03-" + "Q" * 48

    def broken(*_: Any, **__: Any) -> Any:
        raise RuntimeError(f"pipeline bug (token {secret})")

    monkeypatch.setattr(model_activities, "compact", broken)
    ws = workspace(tmp_path, 4)
    plan = [[read(1)], [read(2)], [read(3)], [read(4)], STOP]
    policy = ContextPolicy(budget=12_000, trigger=8_000, keep=1, clear_at_least=500, reserve_output=1_024, headroom=500)
    run_id, result, _ = await run_plan(temporal_client, store, ws, plan, policy)
    assert result.status == "completed", result.reason
    failed = events(store, run_id, CompactionDone)
    assert failed and all(e.report.outcome == "failed" and e.projection_version is None for e in failed), failed
    assert len(events(store, run_id, CompactionStarted)) == len(failed)
    assert all("RuntimeError: pipeline bug" in (e.error or "") for e in failed)
    assert all(secret not in (e.error or "") and "[REDACTED:" in (e.error or "") for e in failed)
    assert store.projections(run_id) == []
    limit = policy.limit(200_000)
    sizes = [e.calibrated_tokens for e in events(store, run_id, ModelCalled)]
    assert max(sizes) <= limit, f"every request fitted under the hard limit {limit}: {sizes}"
    assert sum(e.token_estimate for e in store.transcript(run_id)) > limit, "the transcript itself grew past it"


async def test_a_compaction_whose_activity_fails_after_its_retries_is_audited_and_the_run_goes_on(
    store, temporal_client, tmp_path
):
    """The database refuses to store the projection, as when it is down: the activity gets its
    three attempts (each audited as started), then the workflow audits the failure and the run
    goes on; the next compaction, once the database answers, is applied."""
    faulty = FaultyStore(store)
    faulty.inject("save_projection", raising(StoreUnavailable("the database is restarting")), times=3)
    ws = workspace(tmp_path, 4)
    plan = [[read(1)], [read(2)], [read(3)], [read(4)], STOP]
    policy = ContextPolicy(trigger=9_000, target_ratio=0.95, keep=1, clear_at_least=500)
    run_id, result, _ = await run_plan(temporal_client, store, ws, plan, policy, worker_store=faulty)
    assert result.status == "completed", result.reason
    assert faulty.fired["save_projection"] == 3
    records = store.audit(run_id)
    attempts = [r.event.attempt for r in records if isinstance(r.event, CompactionStarted)]
    assert attempts[:3] == [1, 2, 3], attempts
    done = [r for r in records if isinstance(r.event, CompactionDone)]
    first = done[0]
    assert first.actor == "workflow" and first.event.report.outcome == "failed", first
    assert "failed after its retries" in (first.event.error or "") and "the database is restarting" in (first.event.error or "")
    assert any(r.event.report.outcome == "applied" for r in done[1:]), "a later compaction was applied"
    assert store.verify_chain(run_id).ok
