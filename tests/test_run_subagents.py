"""Subagents: `task` calls start child runs with a clean context and read-only tools, in
parallel; their short findings come back as tool results; a failing child returns a string and
its siblings finish; children cannot cause effects or start grandchildren; their usage counts in
the parent's, and in its token cap (from the spend ledger); their transcripts are kept, nested under the parent, and verify."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from longrun.context.state_block import parse_state_block
from longrun.context.tokens import estimate_request, estimate_text
from longrun.errors import FatalProviderError
from longrun.models.blocks import TextBlock, ToolUseBlock
from longrun.models.provider import ModelInfo, ModelRequest, ModelResponse, Usage
from longrun.models.spec import RunCaps, RunSpec
from longrun.workflows.agent_run import AgentRunWorkflow
from tests.support.harness import running_worker

pytestmark = pytest.mark.slow

FILES = {f"mod{i}.py": "\n".join(f"def f{i}_{j}(x):\n    return x + {j}  # line {j}" for j in range(300)) for i in range(3)}


@dataclass
class FamilyProvider:
    """Parent: one turn of parallel `task` calls, then stop. Children: behave as their brief says."""

    briefs: list[str]
    name: str = "test-family"
    info: ModelInfo = field(default_factory=lambda: ModelInfo(name="test-family", window=200_000, max_output=8_192))
    parent_requests: list[ModelRequest] = field(default_factory=list)

    def complete(self, request: ModelRequest) -> ModelResponse:
        state = parse_state_block(request.messages[-1].text() if request.messages[-1].role == "user" else "") or {}
        objective = state.get("objective", "")
        turn = sum(1 for m in request.messages if m.role == "assistant")
        usage = Usage(input_tokens=estimate_request(request), output_tokens=25)
        if objective.startswith("Subagent brief:"):
            return self.child(objective, turn, usage)
        self.parent_requests.append(request)
        if turn == 0:
            calls = [ToolUseBlock(id=f"toolu_task_{i}", name="task", input={"brief": b}) for i, b in enumerate(self.briefs)]
            return ModelResponse(content=calls, stop_reason="tool_use", usage=usage, model=self.name)
        if turn == 1:
            return ModelResponse(content=[ToolUseBlock(id="toolu_stop", name="set_next_action", input={"next_action": "stop"})],
                                 stop_reason="tool_use", usage=usage, model=self.name)
        return ModelResponse(content=[TextBlock(text="report")], stop_reason="end_turn", usage=usage, model=self.name)

    def child(self, objective: str, turn: int, usage: Usage) -> ModelResponse:
        target = next((f for f in FILES if f in objective), "mod0.py")
        if "crash" in objective:
            raise FatalProviderError("the model refused the request (test)", status=400)
        if "loop" in objective:
            return ModelResponse(content=[ToolUseBlock(id=f"toolu_l{turn}", name="read_file", input={"path": target})],
                                 stop_reason="tool_use", usage=usage, model=self.name)
        if "evil" in objective and turn == 0:
            calls = [ToolUseBlock(id="toolu_e0", name="write_file", input={"path": "pwned.txt", "content": "x"}),
                     ToolUseBlock(id="toolu_e1", name="task", input={"brief": "grandchild"}),
                     ToolUseBlock(id="toolu_e2", name="write_note", input={"text": "child note"})]
            return ModelResponse(content=calls, stop_reason="tool_use", usage=usage, model=self.name)
        if turn == 0:
            return ModelResponse(content=[ToolUseBlock(id="toolu_r0", name="read_file", input={"path": target})],
                                 stop_reason="tool_use", usage=usage, model=self.name)
        answer = f"FINDINGS:\n- {target} adds j to x in every function (source: {target}:2)\nUNCERTAIN:\n- none"
        return ModelResponse(content=[TextBlock(text=answer)], stop_reason="end_turn", usage=usage, model=self.name)

    def count_tokens(self, request: ModelRequest) -> int:
        return estimate_request(request)


def workspace(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    for name, text in FILES.items():
        (ws / name).write_text(text)
    return ws


def spec(ws, **kw) -> RunSpec:
    return RunSpec(objective="survey the modules", constraints=["Never modify mod*.py files."], workspace=str(ws), **kw)


async def test_parallel_children_return_findings_and_the_parent_grows_by_findings_only(store, temporal_client, tmp_path):
    ws = workspace(tmp_path)
    provider = FamilyProvider(briefs=[f"Look at {name} for arithmetic slips." for name in FILES])
    async with running_worker(temporal_client, store, provider=provider) as h:
        run_id = await h.start(spec(ws))
        result = await h.result(run_id)
    assert result.status == "completed", result.reason

    children = store.list_runs(parent_run_id=run_id)
    assert len(children) == 3 and all(c.status == "completed" for c in children)
    for child in children:
        assert child.spec.read_only and child.spec.constraints == ["Never modify mod*.py files."]
        assert child.spec.objective.startswith("Subagent brief:")
        assert store.verify_chain(child.run_id).ok
        reads = [e for e in store.transcript(child.run_id) if e.role == "user" and e.message.tool_results()]
        assert reads, "the child did the reading, in its own transcript"
    # the children ran at the same time
    starts = sorted(store.transcript(c.run_id)[0].created_at for c in children)
    ends = sorted(store.transcript(c.run_id)[-1].created_at for c in children)
    assert starts[-1] < ends[0], "children overlapped in time"

    before, after = provider.parent_requests[0], provider.parent_requests[1]
    findings = [b for b in after.messages[-1].content if getattr(b, "type", "") == "tool_result"]
    assert len(findings) == 3 and all("FINDINGS:" in str(b.content) and "(source: mod" in str(b.content) for b in findings)
    growth = estimate_request(after) - estimate_request(before)
    findings_tokens = sum(estimate_text(str(b.content)) for b in findings)
    files_tokens = sum(estimate_text(t) for t in FILES.values())
    assert growth < findings_tokens + 400, f"parent grew by {growth}, findings are {findings_tokens}"
    assert growth < files_tokens / 10, "the files' contents stayed in the children"

    # children's tokens count in the parent's usage
    own = sum(r.event.usage.input_tokens for r in store.audit(run_id) if r.kind == "model_called")
    kids = sum(e.usage.input_tokens for c in children for e in store.transcript(c.run_id) if e.usage)
    assert kids > 0 and result.usage.input_tokens == own + kids
    assert store.verify_chain(run_id).ok


async def test_failing_children_return_a_string_and_siblings_finish(store, temporal_client, tmp_path):
    ws = workspace(tmp_path)
    provider = FamilyProvider(briefs=["crash on mod0.py", "loop over mod1.py", "Look at mod2.py."])
    async with running_worker(temporal_client, store, provider=provider) as h:
        run_id = await h.start(spec(ws, subagent_caps=RunCaps(max_turns=3)))
        result = await h.result(run_id)
    assert result.status == "completed"
    results = [b for b in provider.parent_requests[1].messages[-1].content if getattr(b, "type", "") == "tool_result"]
    texts = [str(b.content) for b in results]
    assert texts[0].startswith("worker failed:") and "refused" in texts[0]
    assert texts[1].startswith("worker failed:") and "turn cap" in texts[1]
    assert texts[2].startswith("FINDINGS:")
    assert sorted(c.status for c in store.list_runs(parent_run_id=run_id)) == ["completed", "failed", "failed"]


@dataclass
class CountedFamily(FamilyProvider):
    """The family, with round usage: 1,000 tokens a parent request, 2,000 a child's."""

    def complete(self, request: ModelRequest) -> ModelResponse:
        last = request.messages[-1]
        state = parse_state_block(last.text() if last.role == "user" else "") or {}
        tokens = 2_000 if state.get("objective", "").startswith("Subagent brief:") else 1_000
        return super().complete(request).model_copy(update={"usage": Usage(input_tokens=tokens)})


async def test_a_childs_tokens_count_in_its_parents_token_cap(store, temporal_client, tmp_path):
    """The parent's own turn 1 is 1,000 tokens of its 2,500; its child loops to its turn cap (3
    requests, 6,000 tokens). Counted in the ledger, the parent stops before its turn 2 call."""
    ws = workspace(tmp_path)
    provider = CountedFamily(briefs=["loop over mod0.py"])
    async with running_worker(temporal_client, store, provider=provider) as h:
        run_id = await h.start(spec(ws, caps=RunCaps(max_tokens=2_500), subagent_caps=RunCaps(max_turns=3)))
        result = await h.result(run_id)
        history = await h.client.get_workflow_handle(run_id).fetch_history()
    (child,) = store.list_runs(parent_run_id=run_id)
    assert child.status == "failed" and "turn cap" in child.reason
    assert store.run_spend([child.run_id])[child.run_id].tokens == 6_000
    assert result.status == "failed" and result.reason == "token cap reached (7000 of 2500 tokens)", result.reason
    assert len(provider.parent_requests) == 1, "the parent's turn 2 never called the model"
    assert result.turns == 1, "the turn the cap stopped did not happen"
    await Replayer(workflows=[AgentRunWorkflow], data_converter=pydantic_data_converter).replay_workflow(history)


async def test_a_child_cannot_cause_effects_or_start_a_grandchild(store, temporal_client, tmp_path):
    ws = workspace(tmp_path)
    provider = FamilyProvider(briefs=["evil plan for mod0.py"])
    async with running_worker(temporal_client, store, provider=provider) as h:
        run_id = await h.start(spec(ws))
        result = await h.result(run_id)
    assert result.status == "completed"
    assert not (ws / "pwned.txt").exists()
    (child,) = store.list_runs(parent_run_id=run_id)
    assert store.list_runs(parent_run_id=child.run_id) == [], "no grandchild"
    verdicts = [(r.event.tool, r.event.verdict) for r in store.audit(child.run_id) if r.kind == "gate_verdict"]
    assert sorted(verdicts[:3]) == [("task", "deny"), ("write_file", "deny"), ("write_note", "deny")]
    assert store.load_state(child.run_id).notes == [] and store.all_effects(child.run_id) == []
    tools_offered = {t.name for t in provider.parent_requests[0].tools}
    assert "task" in tools_offered


async def test_scripted_agent_delegates_a_wide_survey_and_fixes_the_bug(store, temporal_client, tmp_path):
    """The offline scripted agent (a deterministic stand-in for a model) hands a breadth-first
    survey of many files to parallel subagents, then fixes what a child found."""
    import shlex
    import sys

    from longrun.client import decide
    from tests.support.harness import copy_sample

    argv = [sys.executable, "-m", "unittest", "discover", "-s", "tests", "-q"]
    ws = copy_sample("wide", tmp_path)
    run_spec = RunSpec(
        objective="The weekly demand forecast for depot items comes out too low. Find the defect and propose a fix.",
        constraints=[f"tests: {shlex.join(argv)}"], workspace=str(ws), approvers=["alice"], allowed_commands=[argv],
    )
    async with running_worker(temporal_client, store) as h:
        run_id = await h.start(run_spec)
        waiting = await h.wait_for(run_id, lambda s: s.status in ("waiting_approval", "completed", "failed"), timeout=120)
        assert waiting.status == "waiting_approval", waiting.reason
        assert waiting.pending_approval.arguments["path"] == "depot/smoothing.py"
        await decide.approve(h.client, run_id, waiting.pending_approval.approval_id, "alice")
        result = await h.result(run_id)
    assert result.status == "completed", result.reason
    children = store.list_runs(parent_run_id=run_id)
    assert len(children) >= 2 and all(c.status == "completed" for c in children)
    parent_reads = [r.event for r in store.audit(run_id) if r.kind == "tool_ran" and r.event.tool == "read_file"]
    child_reads = [r for c in children for r in store.audit(c.run_id) if r.kind == "tool_ran" and r.event.tool == "read_file"]
    assert len(child_reads) > len(parent_reads), "the breadth-first reading happened in the children"
