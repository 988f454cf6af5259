"""A run's end is its final status and its `run_finished` audit event, written in one statement
(`Store.end_run`): a failure or crash while the end is recorded leaves neither or both, and
`finish_run`'s retry then records it exactly once. Before, the status was set first and the event
appended after; a failure between the two left a finished run whose end was never audited,
because the retry saw the final status and returned."""

from __future__ import annotations

import pytest

from longrun.activities import AgentActivities, Deps
from longrun.errors import StoreUnavailable
from longrun.models.audit import RunFinished, ToolRan
from longrun.models.io import FinishInput
from longrun.models.spec import RunSpec
from longrun.store import InvalidInputError, Store
from longrun.tools import default_registry
from tests.support.faults import FaultyStore, raising
from tests.support.harness import running_worker
from tests.support.policy import PlanProvider
from tests.test_store_cas import _round_trips

STOP = [[("set_next_action", {"next_action": "stop"})]]


def _spec(tmp_path) -> RunSpec:
    return RunSpec(objective="Say hello and stop.", workspace=str(tmp_path))


def _finished(store: Store, run_id: str) -> list[RunFinished]:
    return [r.event for r in store.audit(run_id) if isinstance(r.event, RunFinished)]


def test_the_status_and_run_finished_are_one_statement(db_url: str, tmp_path) -> None:
    with Store.from_url(db_url, pool_size=1, max_overflow=0) as one:
        one.create_run("r", _spec(tmp_path))
        one.audit("r")  # the audit head is cached, as a worker's is after the run's turns
        with _round_trips(one) as trips:
            seqs = one.end_run("r", "completed", "the agent stopped", [RunFinished(status="completed", reason="done")])
        assert len(trips) == 1 and trips[0] not in ("BEGIN", "COMMIT", ";"), trips
        assert (one.get_run("r").status, one.get_run("r").reason) == ("completed", "the agent stopped")
        assert [r.seq for r in one.audit("r")][-1:] == seqs
        assert one.verify_chain("r").ok


@pytest.mark.parametrize(("status", "events", "fragment"), [
    ("running", [RunFinished(status="completed", reason="x")], "does not end a run"),
    ("sleeping", [RunFinished(status="completed", reason="x")], "is not one of"),
    ("completed", [], "at least its run_finished"),
    ("completed", [ToolRan(tool="read_file", call_id="c", is_error=False), {"kind": "made_up"}],
     "events[1]: invalid audit event"),
])
def test_a_refused_end_writes_neither_the_status_nor_an_event(store: Store, tmp_path, status, events,
                                                               fragment) -> None:
    store.create_run("r", _spec(tmp_path))
    with pytest.raises(InvalidInputError) as info:
        store.end_run("r", status, "why", events)
    assert fragment in str(info.value), str(info.value)
    assert store.get_run("r").status == "running"
    assert [r.kind for r in store.audit("r")] == ["run_started"]


@pytest.mark.slow
async def test_a_failed_end_write_is_retried_and_audited_once(store: Store, temporal_client, tmp_path) -> None:
    faulty = FaultyStore(store)
    faulty.inject("end_run", raising(StoreUnavailable("injected: the database restarts")))
    async with running_worker(temporal_client, faulty, provider=PlanProvider(plan=STOP)) as h:
        run_id = await h.start(_spec(tmp_path))
        result = await h.result(run_id)

    assert faulty.fired["end_run"] == 1 and faulty.calls["end_run"] == 2, "refused once, then retried"
    assert result.status == "completed" and store.get_run(run_id).status == "completed"
    assert [e.status for e in _finished(store, run_id)] == ["completed"]
    assert store.audit(run_id)[-1].kind == "run_finished"
    assert store.verify_chain(run_id).ok

    # a retry after the end landed (the worker died before Temporal heard back) adds nothing
    before = len(store.audit(run_id))
    acts = AgentActivities(Deps(store=store, registry=default_registry(), provider_for=lambda _m: PlanProvider(plan=[])))
    acts.finish_run(FinishInput(run_id=run_id, status="completed", reason=result.reason))
    assert len(store.audit(run_id)) == before
