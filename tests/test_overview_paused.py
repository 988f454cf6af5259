"""Issue 28 leftover: the console's `/metrics` counted paused runs as 0. Pausing lives in the
workflow (the `runs` row says `running` until the run ends), so the gauge reads it from what
PostgreSQL holds: the last pause/resume control, and a head state that waits for a human. Scraped
as an operator's Prometheus sees it, from the console's registry on a real database."""

from __future__ import annotations

from pathlib import Path

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

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


def ask_for_a_human(store: Store, run_id: str) -> None:
    def mutate(state: TaskState) -> TaskState:
        return state.model_copy(update={"next_action": NextAction.ask_human})

    store.update_state(run_id, store.load_state(run_id).state_version, mutate, "workflow", "ask_human")


def test_paused_runs_are_counted_as_paused(store: Store, tmp_path: Path) -> None:
    for run_id in ("paused-run", "resumed-run", "asking-run", "plain-run"):
        store.create_run(run_id, RunSpec(objective="x", workspace=str(tmp_path)))
    store.append_audit("paused-run", RunControl(action="pause"))
    store.append_audit("resumed-run", RunControl(action="pause"))
    store.append_audit("resumed-run", RunControl(action="resume"))
    ask_for_a_human(store, "asking-run")
    assert runs_by_status(store) == {"paused": 2, "running": 2}

    # a resume does not end a wait for a human (only `say` does); a later pause wins over a resume
    store.append_audit("asking-run", RunControl(action="resume"))
    store.append_audit("resumed-run", RunControl(action="pause"))
    assert runs_by_status(store) == {"paused": 3, "running": 1}

    # a finished run counts as what it ended as, whatever its last control was
    store.set_run_status("paused-run", "cancelled", "cancelled by an operator")
    assert runs_by_status(store) == {"paused": 2, "running": 1, "cancelled": 1}
