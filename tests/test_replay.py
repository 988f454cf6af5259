"""Replayer tests: histories recorded by this suite replay against AgentRunWorkflow without
non-determinism, and a deliberately changed workflow is rejected.

`tests/histories/*.json` are histories recorded by `record_history` below (set
LONGRUN_RECORD_HISTORIES=1 to write the current shape's as `agent_run_stage_boundary.json`); they
guard against a change to the workflow that would break runs already in flight. Two of them
predate the fused turn (`agent_run_approval.json`, `agent_run_before_final_report.json`) and
replay its stepwise shape; `agent_run_fused_approval.json` predates `STAGE_BOUNDARY_PATCH` (a
stage boundary from the tool results, deferred after a compaction) and
`agent_run_stage_boundary.json` has it: a complete_stage its tool refuses, one that succeeds and
the stage-boundary compaction it asks for. The test also records a fresh one and replays it, and
checks that a 10 kB instruction given through `say` left no part of itself in the history.
`agent_run_signed_decisions.json` (written by `record_signed_history` with the same variable) has
every kind of signed decision: an approval with edited arguments, a rejection through
`reject_approval` (`workflow.patched("signed-decisions")`), a scope used once and one revoked.
`agent_run_start_run.json` is `record_history`'s run after `START_RUN_PATCH`: each generation
starts with one `start_run` activity (the others call `load_run` and `record_run_tools`).
`agent_run_shape.json` is the same run after `SHAPE_PATCH`: one patch marker for all of them.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import random
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer
from temporalio.workflow import NondeterminismError

from longrun.client import decide
from longrun.client import runs as client_runs
from longrun.models.spec import RunSpec
from longrun.workflows.agent_run import AgentRunWorkflow
from longrun.workflows.base import SHAPE_PATCH
from longrun.workflows.runner import workflow_runner
from tests.support.changed_workflow import ChangedAgentRunWorkflow
from tests.support.harness import running_worker
from tests.support.policy import PlanProvider

pytestmark = pytest.mark.slow

HISTORIES = Path(__file__).parent / "histories"
PLAN = [
    [("read_file", {"path": "hello.txt"}), ("write_note", {"text": "greeting has a typo"}),
     ("complete_stage", {"summary": "   "})],
    [("complete_stage", {"summary": "survey done: the typo is in hello.txt"})],
    [("set_next_action", {"next_action": "edit"})],
    [("apply_patch", {"path": "hello.txt", "old": "helo", "new": "hello"})],
    [("set_next_action", {"next_action": "stop"})],
]


_WORDS = ["keep", "the", "exclamation", "marks", "greeting", "vendor", "files", "untouched", "staging", "tokens"]
_RNG = random.Random(7)
INSTRUCTION = " ".join(_RNG.choice(_WORDS) + str(i) for i in range(1_200))[:10_000]
"""A 10 kB instruction, every stretch of it unique (each word is numbered)."""


def decoded_history(history: WorkflowHistory) -> str:
    """The history's JSON with every payload's bytes decoded alongside (payloads are base64)."""
    raw = history.to_json()
    parts = [raw]

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            data = value.get("data")
            if isinstance(data, str):
                with contextlib.suppress(ValueError):
                    parts.append(base64.b64decode(data).decode("utf-8", errors="replace"))
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    walk(json.loads(raw))
    return "\n".join(parts)


async def record_history(store, client, tmp_path) -> WorkflowHistory:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "hello.txt").write_text("helo world\n")
    async with running_worker(client, store, provider=PlanProvider(plan=PLAN)) as h:
        run_id = await h.start(RunSpec(objective="Fix the greeting.", workspace=str(ws), approvers=["alice"]))
        pending = (await h.wait_for(run_id, lambda s: s.status == "waiting_approval")).pending_approval
        await client_runs.say(h.client, h.store, run_id, INSTRUCTION)
        await decide.approve(h.client, run_id, pending.approval_id, "alice")
        result = await h.result(run_id)
        assert result.status == "completed"
        return await h.client.get_workflow_handle(run_id).fetch_history()


def replayer(workflow_cls) -> Replayer:
    """A replayer with the worker's own runner (the sandbox with longrun passed through)."""
    return Replayer(workflows=[workflow_cls], data_converter=pydantic_data_converter, workflow_runner=workflow_runner())


async def test_recorded_histories_replay_and_a_changed_workflow_is_rejected(store, temporal_client, tmp_path):
    fresh = await record_history(store, temporal_client, tmp_path)
    if os.environ.get("LONGRUN_RECORD_HISTORIES"):
        HISTORIES.mkdir(exist_ok=True)
        (HISTORIES / "agent_run_stage_boundary.json").write_text(fresh.to_json())
    text = decoded_history(fresh)
    assert SHAPE_PATCH in text and "stage_boundary" in text, "the shape's patch (the boundary's among them) and compaction"
    assert "instruction_id" in text, "the say update is in the history, by id"
    events = json.loads(fresh.to_json())["events"]
    kinds = [e["eventType"] for e in events]
    # one patch marker and one search-attribute upsert for the whole shape, not one per patch
    assert kinds.count("EVENT_TYPE_MARKER_RECORDED") == 1, kinds
    assert kinds.count("EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES") == 1, kinds
    leaked = [i for i in range(0, len(INSTRUCTION) - 24, 24) if INSTRUCTION[i:i + 24] in text]
    assert leaked == [], f"{len(leaked)} pieces of the instruction are in the workflow history"
    stored = [
        WorkflowHistory.from_json(p.stem, json.loads(p.read_text())) for p in sorted(HISTORIES.glob("*.json"))
    ]
    assert stored, "tests/histories holds at least one recorded history"
    for history in [fresh, *stored]:
        await replayer(AgentRunWorkflow).replay_workflow(history)
        with pytest.raises(NondeterminismError):
            await replayer(ChangedAgentRunWorkflow).replay_workflow(history)


SIGNED_PLAN = [
    [("set_next_action", {"next_action": "edit"})],
    [("apply_patch", {"path": "hello.txt", "old": "helo", "new": "hello"})],  # approved, edited
    [("apply_patch", {"path": "hello.txt", "old": "world", "new": "World"})],  # rejected
    [("write_file", {"path": "notes/a.txt", "content": "a\n"})],  # covered by the scope
    [("set_next_action", {"next_action": "stop"})],
]


async def record_signed_history(store, client, tmp_path) -> WorkflowHistory:
    """A run with every kind of signed decision: an edited approval, a rejection, a scope used once
    and then revoked."""

    ws = tmp_path / "signed"
    ws.mkdir()
    (ws / "hello.txt").write_text("helo world\n")
    async with running_worker(client, store, provider=PlanProvider(plan=SIGNED_PLAN)) as h:
        run_id = await h.start(RunSpec(objective="Fix the greeting.", workspace=str(ws), approvers=["alice"]))
        first = (await h.wait_for(run_id, lambda s: s.status == "waiting_approval")).pending_approval
        await decide.grant_scope(h.client, store, run_id, "alice", tools=["write_file"], paths=["notes/**"],
                                 max_uses=1, ttl_seconds=3600)
        unused, _ = await decide.grant_scope(h.client, store, run_id, "alice", tools=["apply_patch"], paths=["x/**"],
                                             max_uses=1, ttl_seconds=3600)
        await decide.revoke_scope(h.client, store, run_id, unused, "alice")
        await decide.approve(h.client, run_id, first.approval_id, "alice", store=store, edit={"new": "Hello"})
        second = (await h.wait_for(run_id, lambda s: s.status == "waiting_approval"
                                   and s.pending_approval.approval_id != first.approval_id)).pending_approval
        await decide.reject(h.client, run_id, second.approval_id, "alice", "keep the lower case", store=store)
        assert (await h.result(run_id)).status == "completed"
        assert (ws / "notes" / "a.txt").read_text() == "a\n" and next(
            sc for sc in store.all_scopes(run_id) if sc.tools == ["write_file"]).uses == 1
        return await h.client.get_workflow_handle(run_id).fetch_history()


async def test_signed_decisions_replay_and_carry_no_secret(store, temporal_client, tmp_path):
    fresh = await record_signed_history(store, temporal_client, tmp_path)
    if os.environ.get("LONGRUN_RECORD_HISTORIES"):
        (HISTORIES / "agent_run_signed_decisions.json").write_text(fresh.to_json())
    text = decoded_history(fresh)
    assert SHAPE_PATCH in text and "longrun.reject_approval" in text, "the rejection went through the verifying activity"
    assert '"signature"' in text and "longrun.decision" in text and "longrun.scope" in text
    assert "PRIVATE KEY" not in text, "a proof carries a signature, never a key"
    await replayer(AgentRunWorkflow).replay_workflow(fresh)


RECALL_CONFIG = "".join(f"shard-{k:02d} replicates to region eu-west-{k % 3 + 1} on port {9100 + k}\n" for k in range(40))
RECALL_PLAN = [
    [("read_file", {"path": "routing.txt"})],
    [("read_file", {"path": "big1.txt"})],
    [("read_file", {"path": "big2.txt"})],
    [("recall", {"query": "shard-07 port"})],
    [("set_next_action", {"next_action": "edit"})],
    [("write_file", {"path": "survey.txt", "content": "survey done\n"})],  # asks for an approval
    [("set_next_action", {"next_action": "stop"})],
]


async def record_recall_history(store, client, tmp_path) -> tuple[WorkflowHistory, str]:
    """A run whose compaction writes facts to the run's fact store (issue 25) and whose model then
    calls `recall` for one of them (the compaction activity with facts, and the read-only tool),
    then writes a file with an approval, as every recorded history has one (the changed workflow
    of the Replayer test differs there)."""
    from longrun.models.spec import ContextPolicy
    from tests.test_run_compaction import StepPlan, big_files

    ws = tmp_path / "recall"
    ws.mkdir()
    big_files(ws, 2)
    (ws / "routing.txt").write_text(RECALL_CONFIG)
    # results that may not be cleared, a short tail: the compaction must summarize, which is where
    # facts are read into the store; the extractive summarizer, not the plan provider
    policy = ContextPolicy(trigger=9_000, target_ratio=0.6, keep=1, exclude_tools=["read_file"], tail_tokens=1_000,
                           min_tail_turns=1, summary_model="scripted")
    async with running_worker(client, store, provider=StepPlan(plan=RECALL_PLAN)) as h:
        run_id = await h.start(RunSpec(objective="Survey the routing and ledger files; write what you find to "
                                       "survey.txt.", workspace=str(ws), context=policy, approvers=["alice"]))
        pending = (await h.wait_for(run_id, lambda s: s.status == "waiting_approval")).pending_approval
        await decide.approve(h.client, run_id, pending.approval_id, "alice")
        result = await h.result(run_id)
        assert result.status == "completed", result.reason
        return await h.client.get_workflow_handle(run_id).fetch_history(), run_id


async def test_a_run_with_facts_and_recall_replays(store, temporal_client, tmp_path):
    from longrun.models.audit import CompactionDone, ToolRan

    fresh, run_id = await record_recall_history(store, temporal_client, tmp_path)
    if os.environ.get("LONGRUN_RECORD_HISTORIES"):
        (HISTORIES / "agent_run_recall_facts.json").write_text(fresh.to_json())
    done = [r.event for r in store.audit(run_id) if isinstance(r.event, CompactionDone)]
    assert any(e.report.outcome == "applied" for e in done), [e.report for e in done]
    rows = store.facts(run_id)
    assert any("shard-07" in r.text and "9107" in r.text for r in rows), "the compaction wrote the fact to the store"
    recalled = [r.event for r in store.audit(run_id) if isinstance(r.event, ToolRan) and r.event.tool == "recall"]
    assert len(recalled) == 1 and not recalled[0].is_error, recalled
    answer = [b for e in store.transcript(run_id) for b in e.message.content
              if getattr(b, "tool_use_id", "").startswith("toolu_p004")]
    assert answer and "current" in str(answer[0].content) and "9107" in str(answer[0].content), answer
    text = decoded_history(fresh)
    scheduled = [e["activityTaskScheduledEventAttributes"]["activityType"]["name"]
                 for e in json.loads(fresh.to_json())["events"] if "activityTaskScheduledEventAttributes" in e]
    assert "longrun.compact" in scheduled and "longrun.tool_step" in scheduled, scheduled
    # the fact's words, not its bare number: a token count or duration in a report may be 9107 by chance
    # (CI once saw a compaction report's count equal it)
    leaked = [w for w in ("shard-07", "port 9107", "replicates to region") if w in text]
    assert not leaked, f"facts and tool output stay out of the history: {leaked}"
    stored = WorkflowHistory.from_json("agent_run_recall_facts",
                                       json.loads((HISTORIES / "agent_run_recall_facts.json").read_text()))
    for history in (fresh, stored):
        await replayer(AgentRunWorkflow).replay_workflow(history)
        with pytest.raises(NondeterminismError):
            await replayer(ChangedAgentRunWorkflow).replay_workflow(history)
