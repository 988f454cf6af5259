"""Issue 28 leftover: the console's `/metrics` counted paused runs as 0. Pausing lives in the
workflow (the `runs` row says `running` until the run ends), so the gauge reads it from what
PostgreSQL holds: the last pause/resume control, and a head state that waits for a human. Scraped
as an operator's Prometheus sees it, from the console's registry on a real database; the status
the console lists (and `longrun status` without a worker) says the same of each run."""

from __future__ import annotations

from pathlib import Path

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from longrun.client.status import status_from_store
from longrun.models.audit import RunControl
from longrun.models.spec import RunSpec
from longrun.models.state import NextAction, TaskState
from longrun.store import Store
from longrun.telemetry.overview import console_registry


def runs_by_status(store: Store) -> dict[str, float]:
    """`longrun_runs` by status label, from the text `/metrics` serves (zero rows left out)."""
    text = generate_latest(console_registry(store, min_interval=0)).decode()
    return {s.labels["status"]: s.value for f in text_string_to_metric_families(text) if f.name == "longrun_runs"
            for s in f.samples if s.value}


def listed(store: Store, *run_ids: str) -> dict[str, float]:
    """The same counts from the status each run is listed with (`status_from_store`)."""
    out: dict[str, float] = {}
    for run_id in run_ids:
        status = status_from_store(store, run_id).status.value
        out[status] = out.get(status, 0) + 1
    return out


RUNS = ("paused-run", "resumed-run", "asking-run", "plain-run")


def ask_for_a_human(store: Store, run_id: str) -> None:
    def mutate(state: TaskState) -> TaskState:
        return state.model_copy(update={"next_action": NextAction.ask_human})

    store.update_state(run_id, store.load_state(run_id).state_version, mutate, "workflow", "ask_human")


def test_paused_runs_are_counted_as_paused(store: Store, tmp_path: Path) -> None:
    for run_id in RUNS:
        store.create_run(run_id, RunSpec(objective="x", workspace=str(tmp_path)))
    store.append_audit("paused-run", RunControl(action="pause"))
    store.append_audit("resumed-run", RunControl(action="pause"))
    store.append_audit("resumed-run", RunControl(action="resume"))
    ask_for_a_human(store, "asking-run")
    assert runs_by_status(store) == listed(store, *RUNS) == {"paused": 2, "running": 2}
    assert status_from_store(store, "asking-run").status.value == "paused"

    # a resume does not end a wait for a human (only `say` does); a later pause wins over a resume
    store.append_audit("asking-run", RunControl(action="resume"))
    store.append_audit("resumed-run", RunControl(action="pause"))
    assert runs_by_status(store) == listed(store, *RUNS) == {"paused": 3, "running": 1}

    # a finished run counts as what it ended as, whatever its last control was
    store.set_run_status("paused-run", "cancelled", "cancelled by an operator")
    assert runs_by_status(store) == listed(store, *RUNS) == {"paused": 2, "running": 1, "cancelled": 1}
