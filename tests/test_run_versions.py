"""Writers say which version they write on. An effect's intent (and a state tool's change) is
written on the version the gate checked, or not at all: when another writer moved the head in
between, the call goes back through the gate and is decided again on the new state. The ledger,
a human's approval and instructions re-apply on whatever the head is."""

from __future__ import annotations

import json
import sys

import pytest

from longrun.activities import AgentActivities, Deps
from longrun.activities.base import action_id_for
from longrun.models.blocks import Message, ToolUseBlock
from longrun.models.io import IntentInput, ToolCallRef
from longrun.models.spec import RunSpec
from longrun.tools import default_registry
from tests.support.faults import FaultyStore
from tests.support.harness import running_worker
from tests.support.policy import PlanProvider

pytestmark = pytest.mark.slow

ARGV = [sys.executable, "-c", "print('checked')"]


def racing_writer(store):
    """Another writer that moves the head just before the intent's compare-and-set."""

    def write(run_id, version, mutate, actor, reason, **_):
        head = store.load_state(run_id)
        store.compare_and_set(run_id, head.state_version, head.model_copy(update={"notes": [*head.notes, "raced"]}),
                              "test:racer", "a write between the gate and the intent")

    return write


def is_intent(run_id, version, mutate, actor, reason, **_) -> bool:
    return actor == "ledger" and reason.startswith("intent ")


async def test_a_moved_head_sends_the_effect_back_through_the_gate(store, temporal_client, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    faulty = FaultyStore(store)
    faulty.inject("update_state", racing_writer(store), when=is_intent)
    plan = [[("run_command", {"argv": ARGV})]]
    async with running_worker(temporal_client, faulty, provider=PlanProvider(plan=plan)) as h:
        run_id = await h.start(RunSpec(objective="check", workspace=str(ws), allowed_commands=[ARGV]))
        result = await h.result(run_id)
    assert result.status == "completed", result.reason
    assert faulty.fired["update_state"] == 1

    action = action_id_for(run_id, 1, 0)
    gates = [r.event for r in store.audit(run_id) if r.kind == "gate_verdict" and r.event.action_id == action]
    assert [g.verdict for g in gates] == ["allow", "allow"], "checked twice: before and after the head moved"
    assert gates[1].state_version == gates[0].state_version + 1
    history = store.state_history(run_id)
    racer = next(v for v in history if v.actor == "test:racer")
    intent = next(v for v in history if v.reason == f"intent {action}")
    assert intent.version == racer.version + 1 == gates[1].state_version + 1, "the intent lands on the version re-checked"
    assert "raced" in intent.state.notes, "nothing the other writer wrote is lost"
    assert [(e.action_id, e.status.value) for e in store.all_effects(run_id)] == [(action, "confirmed")]
    assert store.verify_chain(run_id).ok


def test_a_stale_intent_writes_nothing_and_a_retried_one_is_found(store, tmp_path):
    run_id = "run-intent"
    store.create_run(run_id, RunSpec(objective="check", workspace=str(tmp_path), allowed_commands=[ARGV]))
    use = ToolUseBlock(id="toolu_1", name="run_command", input={"argv": ARGV})
    seq = store.append_transcript(run_id, Message(role="assistant", content=[use]), token_estimate=10, turn=1)
    acts = AgentActivities(Deps(store=store, registry=default_registry(), provider_for=lambda _m: PlanProvider(plan=[])))
    head = store.load_state(run_id)
    store.compare_and_set(run_id, head.state_version, head.model_copy(update={"notes": ["moved"]}), "test", "move")
    inp = IntentInput(
        run_id=run_id, call=ToolCallRef(call_id="toolu_1", name="run_command", index=0, seq=seq),
        action_id=action_id_for(run_id, 1, 0), tool="run_command", expected_version=head.state_version,
        action_hash="h" * 64, uses_approval=False,
    )
    versions = len(store.state_history(run_id))
    stale = acts.record_intent(inp)
    assert (stale.outcome, stale.state.version) == ("stale", head.state_version + 1)
    assert len(store.state_history(run_id)) == versions and store.all_effects(run_id) == []
    assert not [r for r in store.audit(run_id) if r.kind == "effect_intent"]

    written = acts.record_intent(inp.model_copy(update={"expected_version": head.state_version + 1}))
    assert (written.outcome, written.attempt) == ("written", 1)
    again = acts.record_intent(inp.model_copy(update={"expected_version": head.state_version + 1}))
    assert (again.outcome, again.attempt) == ("written", 2), "a retry finds its own intent and counts the attempt"
    assert [e.attempts for e in store.all_effects(run_id)] == [2]


async def test_a_head_that_keeps_moving_refuses_the_call_and_says_so(store, temporal_client, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    faulty = FaultyStore(store)
    faulty.inject("update_state", racing_writer(store), times=50, when=is_intent)
    provider = PlanProvider(plan=[[("run_command", {"argv": ARGV})]])
    async with running_worker(temporal_client, faulty, provider=provider) as h:
        run_id = await h.start(RunSpec(objective="check", workspace=str(ws), allowed_commands=[ARGV]))
        result = await h.result(run_id)
    assert result.status == "completed", result.reason
    assert faulty.fired["update_state"] == 3, "checked three times, then refused"
    denied = [r.event for r in store.audit(run_id) if r.kind == "gate_verdict" and r.event.verdict == "deny"]
    assert len(denied) == 1 and denied[0].rule == "head" and "kept changing" in denied[0].reason
    assert store.all_effects(run_id) == [], "the command never ran"
    told = [m for m in provider.requests[-1].messages if m.role == "user"][-1]
    assert "kept changing" in json.dumps(told.model_dump(mode="json")), "the model is told, and may call it again"
