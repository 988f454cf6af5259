"""create_child creates the child run and its opening message in one transaction, and is
idempotent: a retry (or a concurrent attempt) finds the run with its opening message."""

from __future__ import annotations

from longrun.activities import AgentActivities, Deps
from longrun.models.blocks import Message, ToolUseBlock
from longrun.models.io import ChildInput, ToolCallRef
from longrun.models.spec import RunSpec
from longrun.tools import default_registry
from tests.support.faults import FaultyStore
from tests.support.policy import PlanProvider


def parent(store, tmp_path) -> tuple[str, ChildInput]:
    run_id = "run-parent"
    store.create_run(run_id, RunSpec(objective="survey", constraints=["do not edit vendor/"], workspace=str(tmp_path)))
    use = ToolUseBlock(id="toolu_t", name="task", input={"brief": "read a.py", "paths": ["a.py"]})
    seq = store.append_transcript(run_id, Message(role="assistant", content=[use]), token_estimate=10, turn=1)
    return run_id, ChildInput(run_id=run_id, turn=1, call=ToolCallRef(call_id="toolu_t", name="task", index=0, seq=seq))


def activities(store) -> AgentActivities:
    return AgentActivities(Deps(store=store, registry=default_registry(), provider_for=lambda _m: PlanProvider(plan=[])))


def test_a_retried_create_child_finds_the_child_and_its_one_opening_message(store, tmp_path):
    _, inp = parent(store, tmp_path)
    first = activities(store).create_child(inp)
    again = activities(store).create_child(inp)
    assert first == again
    entries = store.transcript(first.child_run_id)
    assert len(entries) == 1 and entries[0].turn == 0
    assert "Subagent brief:" in entries[0].message.text() and "do not edit vendor/" in entries[0].message.text()
    assert store.get_run(first.child_run_id).parent_run_id == "run-parent"


def test_a_concurrent_attempt_that_created_it_first_is_not_an_error(store, tmp_path):
    _, inp = parent(store, tmp_path)
    faulty = FaultyStore(store)
    made: list[str] = []

    def other_attempt_first(run_id, spec, **kwargs):
        # the other attempt wins the race between our lookup and our insert
        store.create_run(run_id, spec, **kwargs)
        made.append(run_id)

    faulty.inject("create_run", other_attempt_first)
    created = activities(faulty).create_child(inp)
    assert made == [created.child_run_id]
    assert len(store.transcript(created.child_run_id)) == 1
