"""pause, resume, cancel and say behave as named; a constraint given through `say` is kept in
TaskState verbatim and reaches the model in the state block."""

from __future__ import annotations

import asyncio
import threading

import pytest

from longrun.client import calls as client_calls
from longrun.client import runs as client_runs
from longrun.errors import ApprovalError
from longrun.models.spec import RunSpec
from longrun.views_common import describe_event
from tests.support.harness import running_worker
from tests.support.policy import PlanProvider

pytestmark = pytest.mark.slow

CONSTRAINT = "Never touch files under vendor/ — they are generated (see ADR-7)."


async def test_pause_say_resume_cancel(store, temporal_client, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("a\n")
    provider = PlanProvider(plan=[[("read_file", {"path": "a.txt"})]] * 400)
    async with running_worker(temporal_client, store, provider=provider) as h:
        run_id = await h.start(RunSpec(objective="read a lot", workspace=str(ws)))
        await h.wait_for(run_id, lambda s: s.turn >= 2)
        assert "paused" in await client_calls.control(h.client, run_id, "pause")
        paused = await h.wait_for(run_id, lambda s: s.status == "paused")
        await asyncio.sleep(1.0)
        still = await h.status(run_id)
        assert still.turn == paused.turn and still.status == "paused", "a paused run takes no turns"

        await client_runs.say(h.client, h.store, run_id, CONSTRAINT, constraint=True)
        await h.wait_for(run_id, lambda s: CONSTRAINT in store.load_state(run_id).constraints, what="the constraint")
        assert (await h.status(run_id)).status == "paused", "say does not resume a paused run"

        await client_calls.control(h.client, run_id, "resume")
        resumed = await h.wait_for(run_id, lambda s: s.turn > still.turn + 2, what="turns after resume")
        assert resumed.status == "running"
        state_block_texts = [m.content[-1].text for m in provider.requests[-2:] for m in [m.messages[-1]]]
        assert any(CONSTRAINT in t for t in state_block_texts), "the constraint reaches the model verbatim"

        await client_calls.control(h.client, run_id, "cancel")
        result = await h.result(run_id)
        assert result.status == "cancelled"
        with pytest.raises(ApprovalError, match="already finished|cancelled"):
            await client_runs.say(h.client, h.store, run_id, "too late")

    assert store.get_run(run_id).status == "cancelled"
    kinds = [r.kind for r in store.audit(run_id)]
    assert kinds.count("run_control") == 3 and "steered" in kinds and kinds[-1] == "run_finished"
    steered = next(r.event for r in store.audit(run_id) if r.kind == "steered")
    assert steered.text == CONSTRAINT and steered.as_constraint
    # the instruction is in the transcript too, as a user message
    assert any(CONSTRAINT in e.message.text() for e in store.transcript(run_id) if e.role == "user")


class HeldTurn(PlanProvider):
    """Holds its third model call until `release` is set, so a test can queue a say and a
    cancel while a turn is in flight: both land before the same turn boundary."""

    def __init__(self) -> None:
        super().__init__(plan=[[("read_file", {"path": "a.txt"})]] * 50)
        self.entered = threading.Event()
        self.release = threading.Event()

    def complete(self, request):  # type: ignore[no-untyped-def]
        if self.step(request) == 2:
            self.entered.set()
            assert self.release.wait(60), "the test never released the held turn"
        return super().complete(request)


async def test_a_say_still_queued_when_the_run_is_cancelled_is_audited_as_never_applied(store, temporal_client, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("a\n")
    provider = HeldTurn()
    async with running_worker(temporal_client, store, provider=provider) as h:
        run_id = await h.start(RunSpec(objective="read a lot", workspace=str(ws)))
        assert await asyncio.to_thread(provider.entered.wait, 60), "the run never reached its third turn"
        assert "queued" in await client_runs.say(h.client, h.store, run_id, CONSTRAINT, constraint=True)
        assert "cancelling" in await client_calls.control(h.client, run_id, "cancel")
        provider.release.set()
        assert (await h.result(run_id)).status == "cancelled"

    records = store.audit(run_id)
    kinds = [r.kind for r in records]
    assert "steered" not in kinds, "a cancel at the boundary comes before the queued say"
    assert kinds[-2:] == ["instruction_dropped", "run_finished"], kinds
    dropped = records[-2]
    assert dropped.event.text == CONSTRAINT and dropped.event.as_constraint and dropped.event.instruction_id == 1
    shown = describe_event(dropped)
    assert "never applied" in shown and "cancelled" in shown, shown
    assert CONSTRAINT not in store.load_state(run_id).constraints
    assert store.verify_chain(run_id).ok
