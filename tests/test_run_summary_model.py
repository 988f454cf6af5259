"""`summary_model`: the context's summaries go to a cheaper model than the run's. A run whose
model is Sonnet and whose summary model is Haiku, over the real SDK against the fake Messages
server, sends its agent turns to one and its summary requests to the other; a summary model this
worker cannot build falls back to the extractive summary, saying why; a bad name is refused."""

from __future__ import annotations

import shlex
import sys
from typing import Any

import pydantic
import pytest

from longrun.activities import AgentActivities, Deps
from longrun.client import calls as client_calls
from longrun.client import decide
from longrun.models.blocks import Message, TextBlock, ToolResultBlock, ToolUseBlock
from longrun.models.io import CompactInput
from longrun.models.spec import ContextPolicy, RunSpec
from longrun.providers import get_provider
from longrun.providers.summarizer import SYSTEM_PROMPT as SUMMARIZER_PROMPT
from longrun.tools import default_registry
from tests.fake_anthropic import scripted_policy, text_response
from tests.fixtures.anthropic import FAKE_API_KEY
from tests.support.harness import copy_sample, running_worker

TEST_ARGV = [sys.executable, "-m", "unittest", "discover", "-s", "tests", "-q"]
SUMMARY = ("<summary_of_earlier_work>\n## Goal\nFind the defect in the stats helper.\n## Progress\n- read stats.py\n"
           "## Facts\n- moving_average is in stats.py\n## Decisions\n- none yet\n## Next step\n- go on\n"
           "</summary_of_earlier_work>")


def system_text(body: dict[str, Any]) -> str:
    system = body.get("system") or ""
    if isinstance(system, list):
        return "\n".join(str(b.get("text", "")) for b in system if isinstance(b, dict))
    return str(system)


def is_summary_request(body: dict[str, Any]) -> bool:
    return SUMMARIZER_PROMPT in system_text(body)


async def review(client, store, spec: RunSpec, provider_for) -> Any:
    """Run the review, asking for a compaction while the first approval waits, approving all."""
    async with running_worker(client, store, provider_for=provider_for) as h:
        run_id = await h.start(spec)
        waiting = await h.wait_for(run_id, lambda s: s.status == "waiting_approval")
        await client_calls.control(h.client, run_id, "compact_now")  # summarizes older turns whatever the request's size
        await decide.approve(h.client, run_id, waiting.pending_approval.approval_id, "alice")
        while True:
            s = await h.wait_for(run_id, lambda s: s.status in ("waiting_approval", "completed", "failed"))
            if s.status != "waiting_approval":
                break
            await decide.approve(h.client, run_id, s.pending_approval.approval_id, "alice")
        return await h.result(run_id)


@pytest.mark.slow
async def test_summaries_go_to_the_summary_model(store, temporal_client, fake_anthropic, tmp_path):
    providers: dict[str, Any] = {}

    def provider_for(model: str) -> Any:
        """One provider per model name, each on the fake server, as a worker's provider cache."""
        if model not in providers:
            providers[model] = get_provider(model, api_key=FAKE_API_KEY, base_url=fake_anthropic.url)
        return providers[model]

    agent = scripted_policy()
    fake_anthropic.set_policy(lambda body: text_response(SUMMARY) if is_summary_request(body) else agent(body))
    ws = copy_sample("tiny", tmp_path)
    spec = RunSpec(
        objective="The moving averages reported by the stats helper look wrong. Find the defect and propose a fix.",
        constraints=[f"tests: {shlex.join(TEST_ARGV)}"], workspace=str(ws), approvers=["alice"],
        allowed_commands=[TEST_ARGV], model="anthropic:claude-sonnet-4-6",
        context=ContextPolicy(summary_model="anthropic:claude-haiku-4-5", tail_tokens=500, min_tail_turns=1),
    )
    try:
        result = await review(temporal_client, store, spec, provider_for)
    finally:
        for p in providers.values():
            p.close()
    assert result.status == "completed", result.reason
    requests = [r for r in fake_anthropic.message_requests if r.status == 200]
    summaries = [r for r in requests if is_summary_request(r.body)]
    turns = [r for r in requests if not is_summary_request(r.body)]
    assert summaries, "the operator compaction asked for a model summary"
    assert {r.body["model"] for r in summaries} == {"claude-haiku-4-5"}
    assert {r.body["model"] for r in turns} == {"claude-sonnet-4-6"}
    run_id = result.run_id
    reports = [r.event.report for r in store.audit(run_id) if r.kind == "compaction"]
    operator = [r for r in reports if r.trigger == "operator"]
    assert operator and operator[0].summary_source == "model", operator
    assert any(SUMMARY.splitlines()[2] in (p.summary or "") for p in store.projections(run_id))


def test_a_summary_model_this_worker_cannot_build_falls_back_to_the_extractive_summary(store, tmp_path, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    spec = RunSpec(objective="review", workspace=str(tmp_path),
                   context=ContextPolicy(summary_model="anthropic:claude-haiku-4-5", tail_tokens=500))
    run_id = "run-summary-fallback"
    store.create_run(run_id, spec)
    store.append_transcript(run_id, Message.user_text("Objective: review"), token_estimate=5, turn=0)
    for turn in range(1, 7):
        use = ToolUseBlock(id=f"toolu_{turn}", name="read_file", input={"path": f"f{turn}.py"})
        store.append_transcript(run_id, Message(role="assistant", content=[TextBlock(text=f"Reading f{turn}.py."), use]),
                                token_estimate=20, turn=turn)
        code = "".join(f"def f{i}(x):\n    return x * {i}\n" for i in range(300))
        result = ToolResultBlock(tool_use_id=f"toolu_{turn}", content=code)
        store.append_transcript(run_id, Message(role="user", content=[result]), token_estimate=2_000, turn=turn)
    acts = AgentActivities(Deps(store=store, registry=default_registry(), provider_for=lambda m: get_provider(m)))
    base = store.load_state(run_id).state_version
    out = acts.compact(CompactInput(run_id=run_id, turn=6, base_state_version=base, trigger="operator"))
    assert out.report is not None and out.outcome == "summary_rejected", out
    assert out.report.summary_source == "extractive"
    reason = out.report.summary_rejected_reason or ""
    assert "summary model anthropic:claude-haiku-4-5" in reason and "ANTHROPIC_API_KEY" in reason, reason


@pytest.mark.parametrize("name", ["gpt-5", "anthropic:", "claude-haiku-4-5", ""])
def test_a_summary_model_is_named_like_a_run_model(name: str) -> None:
    with pytest.raises(pydantic.ValidationError, match="model must be 'scripted' or 'anthropic:<model-id>'"):
        ContextPolicy(summary_model=name)
    assert ContextPolicy(summary_model="scripted").summary_model == "scripted"
    assert ContextPolicy().summary_model is None
