"""When the run compacts, and what it does when a compaction fails: the stage-boundary trigger,
its deferral, the compaction activity call and its failure.

A stage boundary is a `complete_stage` call that succeeded this turn. The turn's commit asks for a
stage-boundary compaction then; `should_compact` holds every trigger but the hard limit on the
turn right after another compaction, and a boundary held so is remembered
(`RunCursor.stage_boundary_deferred`) and asked for again by the next commit. The workflow always
goes on when a compaction fails: an exception inside the pipeline is the activity's own `failed`
outcome, and an activity that fails after its retries is audited here.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError, is_cancelled_exception

with workflow.unsafe.imports_passed_through():
    from longrun.activities.contract import Activities
    from longrun.models.audit import CompactionDone
    from longrun.models.context import CompactionReport, Trigger
    from longrun.models.io import CommitTurnInput, CompactInput, ToolCallRef, ToolResultRef
    from longrun.workflows import options as opt
    from longrun.workflows.base import RunBase

STAGE_BOUNDARY_PATCH = "stage-boundary-from-results"
"""A stage boundary is a `complete_stage` call that succeeded (not one the gate refused or whose
tool failed), and a boundary on the turn right after a compaction is asked again on the next turn
instead of dropped. Before it, any call named complete_stage counted, once."""
COMPACTION_FAILURE_PATCH = "compaction-failure-goes-on"
"""A compaction activity that still fails after its retries is audited (`compaction`, outcome
`failed`) and the run goes on uncompacted. Before it, the run failed."""


class CompactionMixin(RunBase):
    def _stage_boundary(self, calls: list[ToolCallRef], results: list[ToolResultRef]) -> bool:
        """Whether the turn's commit asks for a stage-boundary compaction: a `complete_stage`
        that succeeded this turn, or a boundary deferred from an earlier commit."""
        if not self._patched(STAGE_BOUNDARY_PATCH):
            return any(call.name == "complete_stage" for call in calls)
        done = any(r.tool == "complete_stage" and not r.is_error for r in results)
        return done or self.cursor.stage_boundary_deferred

    def _note_boundary(self, commit: CommitTurnInput, trigger: Trigger | None) -> None:
        """After a commit: a stage boundary it asked for but that fired nothing (`should_compact`
        holds every trigger but the hard limit on the turn right after a compaction) is asked
        again by the next commit; one that fired a compaction is served, whatever its outcome."""
        if self._patched(STAGE_BOUNDARY_PATCH):
            self.cursor.stage_boundary_deferred = commit.stage_boundary and trigger is None

    async def _compact(self, turn: int, trigger: Trigger, budget: int | None = None) -> None:
        try:
            result = await self._act(
                Activities.compact,
                CompactInput(
                    run_id=self.run_id, turn=turn, base_state_version=self.state.version, trigger=trigger, budget=budget
                ),
                opt.COMPACT,
            )
        except ActivityError as err:
            if is_cancelled_exception(err) or not self._patched(COMPACTION_FAILURE_PATCH):
                raise
            await self._compaction_failed(trigger, err)
            return
        self.compact_requested = False
        if result.outcome in ("applied", "summary_rejected"):
            self.cursor.last_compaction_turn = turn
            self.cursor.last_compaction = result.report
        elif result.report is not None and result.outcome in ("stale", "failed"):
            self.cursor.last_compaction = result.report

    async def _compaction_failed(self, trigger: Trigger, err: ActivityError) -> None:
        """The compaction activity failed after its retries (a database that stayed down, a
        worker that kept dying): audit it and go on with the previous projection. Every request
        is still fitted under the hard limit when it is sent; a threshold fires again at the
        next commit, since no compaction counts as done."""
        cause = err.cause
        message = str(cause.message if isinstance(cause, ApplicationError) else err)
        report = CompactionReport(trigger=trigger, base_state_version=self.state.version, outcome="failed")
        self.compact_requested = False
        self.cursor.last_compaction = report
        await self._record(CompactionDone(
            projection_version=None, report=report, error=f"the compaction activity failed after its retries: {message}"[:2000],
        ))

