"""The `start_run` activity: a run's start in one round trip instead of three.

Each generation of a run began with `load_run`, `record_run_tools` and, at its first start,
`open_change_set`: three activities, each paced by the Temporal server, before the first model
call. A subagent is a short run of its own, so a parent that starts many paid that for each, and
at 100 concurrent runs of a few turns these were a fifth of all activities (bench/orchestration.py).
`start_run` does the three in one call when it can:

- a run whose spec names MCP servers not listed yet keeps the old order (`load_run`, then
  `list_mcp_tools`, then `record_run_tools`, then the change set): its tool list needs the
  listing, and the servers are listed from the workspace as it was before the run's branch;
- otherwise the tool list is recorded (idempotent: a retry or a later generation finds it) and, at
  the first start, the change set is opened (idempotent too), each as its own activity did it, in
  the same read scope.

The workflow calls it behind the `start-run` patch (which a new run's `shape-2026-12` marker
answers for, longrun.workflows.base); histories recorded before keep calling the three
(longrun.workflows.turn_loop).
"""

from __future__ import annotations

from longrun.activities.changes import ChangeSetActivities
from longrun.activities.contract import Activities, implements
from longrun.activities.run import RunActivities
from longrun.activities.run_tools import RunToolsActivities
from longrun.models.io import LoadRunResult, RunRef, StartRunInput


class StartActivities(ChangeSetActivities, RunActivities, RunToolsActivities):
    @implements(Activities.start_run)
    def start_run(self, inp: StartRunInput) -> LoadRunResult:
        """`load_run`; unless an MCP listing must come first, the tool list and (first start) the change set."""
        ref = RunRef(run_id=inp.run_id)
        loaded = self.load_run(ref)
        if loaded.mcp_listing_needed:
            return loaded
        recorded = self.record_run_tools(ref)
        if inp.first_start:
            self.open_change_set(ref)
        return loaded.model_copy(update={"state": recorded.state, "tools_recorded": True, "change_set_done": True})
