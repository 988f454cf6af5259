"""The orchestration floor: a bare workflow that runs no-op activities back to back, in groups of
the size of one agent turn. Only `temporalio` is imported here (the workflow sandbox re-imports
this module), and the workflow and activity names are constants."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import timedelta

from temporalio import activity, workflow

BARE_WORKFLOW = "bench.BareTurns"
NOOP_ACTIVITY = "bench.noop"

TURN_STARTS: dict[str, list[float]] = {}
"""perf_counter at the first activity of each turn, per workflow id (the bench runs the worker in
its own process, so the activities write here directly)."""


@dataclass
class BareInput:
    workflow_id: str
    turns: int
    activities_per_turn: int


@dataclass
class NoopInput:
    workflow_id: str
    turn: int
    index: int


@activity.defn(name=NOOP_ACTIVITY)
def noop(inp: NoopInput) -> None:
    """Does nothing but note when a turn's first activity ran."""
    if inp.index == 0:
        TURN_STARTS.setdefault(inp.workflow_id, []).append(time.perf_counter())


@workflow.defn(name=BARE_WORKFLOW)
class BareTurnsWorkflow:
    @workflow.run
    async def run(self, inp: BareInput) -> int:
        done = 0
        for turn in range(inp.turns):
            for index in range(inp.activities_per_turn):
                await workflow.execute_activity(
                    NOOP_ACTIVITY, NoopInput(inp.workflow_id, turn, index), start_to_close_timeout=timedelta(seconds=30)
                )
                done += 1
        return done
