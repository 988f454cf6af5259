"""The context pipeline inside real runs: a provider overflow ends in compaction and a
successful retry; a compaction that races a state write is discarded as stale; a small budget
makes compaction happen and the run still completes."""

from __future__ import annotations

import shlex
import sys

import pytest

from longrun.activities import AgentActivities, Deps
from longrun.client import decide
from longrun.models.blocks import Message, TextBlock, ToolResultBlock, ToolUseBlock
from longrun.models.io import CompactInput
from longrun.models.spec import ContextPolicy, RunSpec
from longrun.providers import get_provider
from longrun.tools import default_registry
from tests.fake_anthropic import scripted_policy
from tests.fixtures.anthropic import FAKE_API_KEY
from tests.support.harness import copy_sample, running_worker

pytestmark = pytest.mark.slow

TEST_ARGV = [sys.executable, "-m", "unittest", "discover", "-s", "tests", "-q"]
OBJECTIVE = "The moving averages reported by the stats helper look wrong. Find the defect and propose a fix."


def tiny_spec(ws, argv: list[str] = TEST_ARGV, **extra) -> RunSpec:
    return RunSpec(
        objective=OBJECTIVE, constraints=[f"tests: {shlex.join(argv)}"], workspace=str(ws),
        approvers=["alice"], allowed_commands=[argv], **extra,
    )


async def drive_to_end(h, run_id: str):
    """Approve whatever the agent proposes, as alice, until the run ends."""
    while True:
        s = await h.wait_for(run_id, lambda s: s.status in ("waiting_approval", "completed", "failed", "cancelled"))
        if s.status != "waiting_approval":
            return await h.result(run_id)
        await decide.approve(h.client, run_id, s.pending_approval.approval_id, "alice")
        await h.wait_for(run_id, lambda x: x.pending_approval is None or x.pending_approval.approval_id != s.pending_approval.approval_id)


OTHER_PYTHONS = ["x", "ci-12"]
"""Folders for a symlink to this Python: its path is in the test command (a constraint, the
allow-list, every run_command call), so it shifts every request by a few tokens, as the clone's
location did. Whether a run's unshrinkable part (system prompt, tools, summary, task state, the
open tool cycle) landed between the retry's aim and the provider's limit depended on those few
tokens: a fresh clone in a random temporary folder failed about one run in three; with these two
paths the old code failed every time, and 8 of 12 paths tried."""


def python_at(tmp_path, folder: str) -> str:
    link = tmp_path / folder / "python"
    link.parent.mkdir(parents=True)
    link.symlink_to(sys.executable)
    return str(link)


@pytest.mark.parametrize("python_folder", [None, *OTHER_PYTHONS], ids=["this-python", *OTHER_PYTHONS])
async def test_provider_overflow_ends_in_compaction_and_a_successful_retry(
    store, temporal_client, fake_anthropic, tmp_path, python_folder
):
    """A window between the smallest and the largest request of the run: the overflow is
    answered by compaction and a retry that succeeds, also when what no stage may drop is over
    the retry's aim (10% below the provider's limit, scaled into our units): the request then goes
    out at its smallest, under the provider's own limit, instead of the run failing."""
    fake_anthropic.set_policy(scripted_policy())
    argv = [python_at(tmp_path, python_folder), *TEST_ARGV[1:]] if python_folder else TEST_ARGV
    provider = get_provider("anthropic:claude-sonnet-4-6", api_key=FAKE_API_KEY, base_url=fake_anthropic.url)
    # measure the run's request sizes on the fake's own tokenizer, then give it a window in between
    async with running_worker(temporal_client, store, provider=provider) as h:
        await drive_to_end(h, await h.start(tiny_spec(copy_sample("tiny", tmp_path / "a"), argv=argv)))
    sizes = [sum(r.response.get("usage", {}).get(k, 0) for k in ("input_tokens", "cache_read_input_tokens",
             "cache_creation_input_tokens")) for r in fake_anthropic.message_requests if r.status == 200]
    fake_anthropic.window = min(sizes) + (max(sizes) - min(sizes)) * 2 // 3
    fake_anthropic.requests.clear()

    async with running_worker(temporal_client, store, provider=provider) as h:
        run_id = await h.start(tiny_spec(copy_sample("tiny", tmp_path / "b"), argv=argv))
        result = await drive_to_end(h, run_id)
    assert result.status == "completed", result.reason
    statuses = [r.status for r in fake_anthropic.message_requests]
    assert 400 in statuses, "the fake's window was reached"
    first_overflow = statuses.index(400)
    assert 200 in statuses[first_overflow:], "a retry after the overflow succeeded"
    audit = store.audit(run_id)
    errors = [r.event for r in audit if r.kind == "error"]
    assert any("prompt is too long" in e.message for e in errors)
    overflow_compactions = [r.event.report for r in audit if r.kind == "compaction" and r.event.report.trigger == "overflow"]
    assert overflow_compactions and overflow_compactions[0].outcome in ("applied", "summary_rejected")
    assert store.verify_chain(run_id).ok


async def test_small_budget_compacts_and_the_run_still_completes(store, temporal_client, tmp_path):
    policy = ContextPolicy(budget=6_000, trigger=3_500, keep=1, clear_at_least=200, tail_tokens=800, max_summary_tokens=600,
                           reserve_output=1_024, headroom=200)
    async with running_worker(temporal_client, store) as h:
        run_id = await h.start(tiny_spec(copy_sample("tiny", tmp_path), context=policy))
        result = await drive_to_end(h, run_id)
        status = await h.status(run_id)
    assert result.status == "completed", result.reason
    reports = [r.event.report for r in store.audit(run_id) if r.kind == "compaction"]
    applied = [r for r in reports if r.outcome in ("applied", "summary_rejected")]
    assert applied, "a compaction happened"
    assert status.last_compaction is not None
    assert all(r.tokens_after_estimated <= 6_000 for r in applied)
    calls = [r.event for r in store.audit(run_id) if r.kind == "model_called"]
    assert max(c.calibrated_tokens for c in calls) <= policy.limit(200_000), "no request over the budget"
    assert store.projections(run_id), "projections are stored, the transcript is untouched"
    assert len(store.transcript(run_id)) > len(store.projections(run_id)[-1].messages)


class RacingSummarizer:
    """Writes to the task state while compaction runs, like a tool commit racing it."""

    def __init__(self, store, run_id: str) -> None:
        self.store, self.run_id = store, run_id

    def summarize(self, messages, previous_summary, state, max_tokens):
        head = self.store.load_state(self.run_id)
        self.store.compare_and_set(self.run_id, head.state_version, head.model_copy(update={"notes": ["raced"]}),
                                   "test", "a write during compaction")
        return "<summary_of_earlier_work>\n## Goal\nx\n</summary_of_earlier_work>"


def test_compaction_racing_a_state_write_is_discarded_as_stale(store, tmp_path):
    spec = RunSpec(objective="review", workspace=str(tmp_path))
    run_id = "run-race"
    store.create_run(run_id, spec)
    store.append_transcript(run_id, Message.user_text("Objective: review"), token_estimate=5, turn=0)
    for turn in range(1, 8):
        use = ToolUseBlock(id=f"toolu_{turn}", name="read_file", input={"path": f"f{turn}.py"})
        store.append_transcript(run_id, Message(role="assistant", content=[TextBlock(text="reading"), use]),
                                token_estimate=20, turn=turn)
        result = ToolResultBlock(tool_use_id=f"toolu_{turn}", content="x = 1\n" * 800)
        store.append_transcript(run_id, Message(role="user", content=[result]), token_estimate=1600, turn=turn)
    acts = AgentActivities(Deps(store=store, registry=default_registry(), provider_for=lambda m: get_provider(m)))
    acts.summarizer_for = lambda model: RacingSummarizer(store, run_id)  # type: ignore[method-assign]
    base = store.load_state(run_id).state_version
    result = acts.compact(CompactInput(run_id=run_id, turn=7, base_state_version=base, trigger="operator"))
    assert result.outcome == "stale"
    assert store.projections(run_id) == [], "a stale compaction is never written"
    events = [r.event for r in store.audit(run_id) if r.kind == "compaction"]
    assert events[-1].report.outcome == "stale" and events[-1].projection_version is None
    # and a compaction based on an old version is refused before any work
    again = acts.compact(CompactInput(run_id=run_id, turn=7, base_state_version=base, trigger="operator"))
    assert again.outcome == "stale"
