"""The durable turn loop of one agent run: the body of `AgentRunWorkflow` (`agent_run`).

Holds only small things: run id, head state_version, turn, counters, the paused flag and a
pending approval. Transcript text, tool output, human instructions and state live in Postgres
and cross Temporal as ids (see longrun.models.io). One turn, fused (the current shape):

  turn boundary -> turn activity: commit the previous turn's results (compaction first when it
  fires), reconcile, model call -> for each tool call: tool_step (gate, intent, run), or the gate,
  an approval wait, intent and run -> continue-as-new when suggested or every N turns.

Histories recorded before `FUSED_TURN_PATCH` replay the stepwise shape: reconcile, model call,
gate/intent/run per call, commit, compaction. The approval and control handlers are in
`approvals` and `controls`, the tool calls in `tool_calls`, when to compact and what a failed
compaction does in `compaction`, the webhook notifications (started, never awaited, by the run) in
`notifications`.

Why the body is here and not in `agent_run`: it was split out when Temporal's sandbox imported
the workflow's own module afresh for every run it started (issue 26). The worker now passes all of
`longrun` through (`longrun.workflows.runner`), which made that reason moot; the split stays because
`agent_run` is the small declaration the client and the histories name, and this is the loop.
"""

from __future__ import annotations

import asyncio

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from longrun.activities.boundary import ErrorType, error_type
    from longrun.activities.contract import Activities
    from longrun.models.context import Trigger
    from longrun.models.io import (
        AgentRunInput,
        AgentRunResult,
        CommitTurnInput,
        FinishInput,
        ModelCallInput,
        ModelCallResult,
        RunCursor,
        RunRef,
        StartRunInput,
        StateBrief,
        SteerInput,
        TurnInput,
        TurnResult,
    )
    from longrun.models.run import RunStatus
    from longrun.workflows import options as opt
    from longrun.workflows.approvals import GRANT_FAILURE_PATCH
    from longrun.workflows.base import SHAPE_PATCH, Stop
    from longrun.workflows.budget import BudgetMixin
    from longrun.workflows.compaction import COMPACTION_FAILURE_PATCH, STAGE_BOUNDARY_PATCH, CompactionMixin
    from longrun.workflows.controls import ControlsMixin
    from longrun.workflows.interface import WORKFLOW_NAME
    from longrun.workflows.notifications import Outbox
    from longrun.workflows.scopes import ScopesMixin
    from longrun.workflows.tool_calls import ToolCallsMixin

FINAL_REPORT_PATCH = "final-report-turn"
FUSED_TURN_PATCH = "fused-turn"
"""Two activities per plain turn (`turn`, `tool_step`) instead of five; see activities/fused.py."""
CHANGE_SET_PATCH = "git-change-sets"
"""A run on a git workspace works on its own branch in a worktree (longrun.workspace)."""
LEDGER_TOKEN_CAP_PATCH = "ledger-token-cap"
"""The token cap is checked by the turn activity from the spend ledger (outcome `cap`), no longer
from `cursor.usage`, which misses an answer replayed after a crash."""
START_RUN_PATCH = "start-run"
"""A generation starts with one `start_run` activity where it called `load_run`, `record_run_tools`
and, at the first start, `open_change_set` (activities/start.py)."""
DROPPED_SAYS_PATCH = "dropped-says-audited"
"""A run that ends with instructions still queued (a cancel, a cap or a failure reached first)
names them to `finish_run`, which audits each as `instruction_dropped`: before, they vanished
from the record of the run, though the person who sent them was told "queued"."""
MAX_OVERFLOW_RETRIES = 3

__all__ = [
    "CHANGE_SET_PATCH", "COMPACTION_FAILURE_PATCH", "DROPPED_SAYS_PATCH", "FINAL_REPORT_PATCH", "FUSED_TURN_PATCH", "LEDGER_TOKEN_CAP_PATCH",
    "STAGE_BOUNDARY_PATCH", "START_RUN_PATCH", "WORKFLOW_NAME",
    "AgentRunLoop",
]


class AgentRunLoop(ToolCallsMixin, ControlsMixin, ScopesMixin, CompactionMixin, BudgetMixin):
    """Everything `AgentRunWorkflow` does; the workflow class only declares it to Temporal."""

    def __init__(self, inp: AgentRunInput) -> None:
        self.shaped = workflow.patched(SHAPE_PATCH)  # first, before any handler asks a patch
        self.run_id = inp.run_id
        self.cursor = inp.cursor.model_copy(deep=True) if inp.cursor else RunCursor()
        self.status = RunStatus.paused if self.cursor.paused else RunStatus.running
        self.state = StateBrief(version=self.cursor.head_version, step="survey", next_action="inspect")
        self.spec = None
        self.pending = None
        self.decision = None
        self.deciding = False
        self.voided = ""
        self.request_unaudited = False
        self.cancel_requested = False
        self.compact_requested = False
        self.reason = ""
        self.turns_this_generation = 0
        self.children = []
        self.outbox = Outbox()
        self.final_turn_taken = False
        self.fused = False
        self.uncommitted: CommitTurnInput | None = None
        """Fused shape: the last turn's results, committed by the next turn activity (or at the
        next boundary that waits, writes the transcript or ends the run)."""

    # ------------------------------------------------------------------ run
    async def _run(self) -> AgentRunResult:
        try:
            first_start = self.cursor.started_at is None
            if self._patched(START_RUN_PATCH):
                self.spec = await self._act(Activities.start_run, StartRunInput(run_id=self.run_id, first_start=first_start),
                                            opt.OPEN_CHANGE_SET if first_start else opt.DEFAULT)
            else:
                self.spec = await self._act(Activities.load_run, RunRef(run_id=self.run_id))
            self.fused = self._use_fused_turn()
            self._set_state(self.spec.state)
            await self._list_mcp_tools()
            if not self.spec.tools_recorded:
                await self._record_tools()
            self._resume_notifications()
            if first_start:
                self.cursor.started_at = workflow.now()
                if not self.spec.change_set_done:
                    await self._open_change_set()
            while True:
                await self._turn_boundary()
                await (self._turn() if self.fused else self._stepwise_turn())
                if self._should_continue_as_new():
                    await self._flush()
                    await self._hand_over_notifications()
                    await workflow.wait_condition(workflow.all_handlers_finished)
                    self.cursor.paused = self.status is RunStatus.paused
                    self.cursor.generation += 1
                    workflow.continue_as_new(AgentRunInput(run_id=self.run_id, cursor=self.cursor))
        except Stop as stop:
            return await self._finish(stop.status, stop.reason)
        except ActivityError as err:
            cause = err.cause
            message = str(cause.message if isinstance(cause, ApplicationError) else err)
            return await self._finish(RunStatus.failed, f"activity failed: {message}")
        except asyncio.CancelledError:
            await asyncio.shield(
                asyncio.ensure_future(self._finish(RunStatus.cancelled, "cancelled through Temporal"))
            )
            raise

    async def _turn_boundary(self) -> None:
        """Between turns: cancellation, human instructions, pause, asking a human, stop, caps.
        Anything that waits or writes the transcript commits the last turn's results first."""
        while True:
            if self.cancel_requested:
                raise Stop(RunStatus.cancelled, "cancelled by an operator")
            if self.cursor.pending_says:
                await self._flush()
                say = self.cursor.pending_says.pop(0)
                steered = await self._act(
                    Activities.steer,
                    SteerInput(
                        run_id=self.run_id, instruction_id=say.instruction_id, text=say.text,
                        constraint=say.constraint, turn=self.cursor.turn,
                    ),
                )
                self._set_state(steered.state)
                continue
            if self.status is RunStatus.paused:
                await self._flush()
                await workflow.wait_condition(
                    lambda: self.status is not RunStatus.paused or self.cancel_requested or bool(self.cursor.pending_says)
                )
                continue
            if self.state.next_action == "ask_human":
                self.status = RunStatus.paused
                self.reason = self.reason or "the agent asked for a human"
                self._notify("ask_human")
                continue
            if self.state.next_action == "stop":
                # one last turn for the agent's final report (runs recorded before this change
                # stopped at once: the patch keeps their histories replaying)
                if self.final_turn_taken or not self._patched(FINAL_REPORT_PATCH):
                    raise Stop(RunStatus.completed, "the agent set next_action to stop")
                self.final_turn_taken = True
            self.reason = ""
            self._check_caps()
            return

    def _check_caps(self) -> None:
        """The caps counted here. The token cap is the turn activity's, from the spend ledger
        (outcome `cap`); histories recorded before `LEDGER_TOKEN_CAP_PATCH`, and the stepwise
        shape, count it here from the usage the model calls returned."""
        caps = self.spec.caps if self.spec else None
        if caps is None:
            return
        c = self.cursor
        in_memory = not (self.fused and self._patched(LEDGER_TOKEN_CAP_PATCH))
        used = c.usage.total_input + c.usage.output_tokens
        elapsed = (workflow.now() - c.started_at).total_seconds() if c.started_at else 0
        for hit, what in (
            (c.turn >= caps.max_turns, f"turn cap reached ({caps.max_turns} turns)"),
            (c.model_calls >= caps.max_model_calls, f"model-call cap reached ({caps.max_model_calls} calls)"),
            (c.tool_calls >= caps.max_tool_calls, f"tool-call cap reached ({caps.max_tool_calls} calls)"),
            (in_memory and used >= caps.max_tokens, f"token cap reached ({used} of {caps.max_tokens} tokens)"),
            (elapsed >= caps.max_wall_seconds, f"wall-time cap reached ({caps.max_wall_seconds} s)"),
        ):
            if hit:
                raise Stop(RunStatus.failed, what)

    # ------------------------------------------------------------ fused turn
    async def _turn(self) -> None:
        self.cursor.turn += 1
        self.turns_this_generation += 1
        turn = self.cursor.turn
        result = await self._turn_activity(turn)
        if result.outcome == "undecidable":
            effects = ", ".join(result.undecidable)
            await self._ask_human(f"cannot tell whether effect(s) {effects} happened; check and say how to go on")
            return
        if result.outcome == "budget":
            assert result.budget is not None
            await self._budget_stop(result.budget)
            return
        if result.outcome == "cap":
            # no model call: the turn did not happen, as when a cap stops the run at the boundary
            self.cursor.turn -= 1
            self.turns_this_generation -= 1
            raise Stop(RunStatus.failed, result.cap)
        assert result.model is not None
        model = result.model
        if result.budget is not None:
            await self._budget_warn(result.budget)
        self._count_model_call(model)
        results = await self._run_calls(turn, model.tool_calls)
        self.cursor.tool_calls += len(model.tool_calls)
        self.uncommitted = CommitTurnInput(
            run_id=self.run_id, turn=turn, assistant_seq=model.assistant_seq, results=results,
            last_compaction_turn=self.cursor.last_compaction_turn,
            stage_boundary=self._stage_boundary(model.tool_calls, results),
            sent_tokens_estimated=None if model.replayed else model.estimated_tokens,
            assistant_tokens=model.assistant_tokens,
        )
        self._stop_if_done(model)

    async def _turn_activity(self, turn: int) -> TurnResult:
        """The turn activity, with compaction first when the commit says so, and a provider
        overflow answered by compaction under a lower budget and a retry with that ceiling."""
        ceiling: int | None = None
        hard: int | None = None
        attempt = 0
        while True:
            commit = self.uncommitted
            try:
                result = await self._act(
                    Activities.turn,
                    TurnInput(
                        run_id=self.run_id, turn=turn, commit=commit, operator_compact=self.compact_requested,
                        overflow_retry=attempt, limit_override=ceiling, limit_hard=hard,
                    ),
                    opt.MODEL_CALL,
                )
            except ActivityError as err:
                ceiling, hard = self._overflow_ceilings(err, attempt, ceiling, hard)
                self.uncommitted = None  # an overflow comes from the model call, after the commit
                if commit is not None:  # which fired no compaction
                    self._note_boundary(commit, None)
                attempt += 1
                await self._compact(turn, "overflow", budget=ceiling)
                continue
            self.uncommitted = None
            if result.commit is not None:
                self._set_state(result.commit.state)
                if commit is not None:
                    self._note_boundary(commit, result.trigger)
            if result.outcome == "compact" and result.trigger is not None:
                await self._compact(commit.turn if commit else turn - 1, result.trigger)
                continue
            self._set_state(result.state)
            return result

    # ------------------------------------------------------------ stepwise turn
    async def _stepwise_turn(self) -> None:
        """The turn of histories recorded before `FUSED_TURN_PATCH`, activity by activity."""
        self.cursor.turn += 1
        self.turns_this_generation += 1
        turn = self.cursor.turn
        rec = await self._act(Activities.reconcile, RunRef(run_id=self.run_id))
        self._set_state(rec.state)
        if rec.undecidable:
            await self._ask_human(f"cannot tell whether effect(s) {', '.join(rec.undecidable)} happened; check and say how to go on")
            return
        model = await self._model_call(turn)
        self._count_model_call(model)
        results = await self._run_calls(turn, model.tool_calls)
        self.cursor.tool_calls += len(model.tool_calls)
        pending = CommitTurnInput(
            run_id=self.run_id, turn=turn, assistant_seq=model.assistant_seq, results=results,
            last_compaction_turn=self.cursor.last_compaction_turn,
            stage_boundary=self._stage_boundary(model.tool_calls, results) or self.compact_requested,
            sent_tokens_estimated=None if model.replayed else model.estimated_tokens,
            assistant_tokens=model.assistant_tokens,
        )
        commit = await self._act(Activities.commit_turn, pending)
        self._set_state(commit.state)
        trigger = "operator" if self.compact_requested else commit.compaction_trigger
        self._note_boundary(pending, trigger)
        if trigger:
            await self._compact(turn, trigger)
        self._stop_if_done(model)

    async def _model_call(self, turn: int) -> ModelCallResult:
        ceiling: int | None = None
        hard: int | None = None
        attempt = 0
        while True:
            try:
                return await self._act(
                    Activities.model_call,
                    ModelCallInput(
                        run_id=self.run_id, turn=turn, overflow_retry=attempt, limit_override=ceiling, limit_hard=hard
                    ),
                    opt.MODEL_CALL,
                )
            except ActivityError as err:
                ceiling, hard = self._overflow_ceilings(err, attempt, ceiling, hard)
                attempt += 1
                await self._compact(turn, "overflow", budget=ceiling)

    # ------------------------------------------------------------ shared
    @staticmethod
    def _overflow_ceilings(
        err: ActivityError, attempt: int, ceiling: int | None, hard: int | None
    ) -> tuple[int | None, int | None]:
        """The lower ceilings an overflow suggests (the aim and the provider's own limit);
        re-raises anything that is not an overflow, and stops after `MAX_OVERFLOW_RETRIES`."""
        if error_type(err) is not ErrorType.CONTEXT_OVERFLOW:
            raise err
        if attempt == MAX_OVERFLOW_RETRIES:
            raise Stop(RunStatus.failed, "the provider still reports a context overflow after hard enforcement")
        details = err.cause.details if isinstance(err.cause, ApplicationError) else ()
        aim = details[0] if details else None
        most = details[1] if len(details) > 1 else None
        if aim:
            ceiling = int(aim) if ceiling is None else min(ceiling, int(aim))
        if most:
            hard = int(most) if hard is None else min(hard, int(most))
        return ceiling, hard

    def _count_model_call(self, model: ModelCallResult) -> None:
        if not model.replayed:
            self.cursor.model_calls += 1
            self.cursor.usage = self.cursor.usage + model.usage

    def _stop_if_done(self, model: ModelCallResult) -> None:
        if not model.tool_calls and self.state.next_action != "ask_human":
            if self.final_turn_taken:
                raise Stop(RunStatus.completed, "the agent set next_action to stop and gave its final report")
            raise Stop(RunStatus.completed, "the agent ended its turn without tool calls")

    async def _flush(self, *, compact: bool = True) -> None:
        """Fused shape: commit the last turn's results now (and compact when that fires)."""
        pending, self.uncommitted = self.uncommitted, None
        if pending is None:
            return
        commit = await self._act(Activities.commit_turn, pending)
        self._set_state(commit.state)
        trigger: Trigger | None = "operator" if self.compact_requested else commit.compaction_trigger
        if compact:
            self._note_boundary(pending, trigger)
        if compact and trigger:
            await self._compact(pending.turn, trigger)

    async def _finish(self, status: RunStatus, reason: str) -> AgentRunResult:
        """Commit the last turn's results (so the transcript holds every result), then record the
        final status. A commit that fails (after its retries) does not keep the run from ending."""
        if self.uncommitted is not None and self.uncommitted.results:
            try:
                await self._flush(compact=False)
            except ActivityError:
                workflow.logger.warning("run %s ends without its last turn's results committed", self.run_id)
        self.uncommitted = None
        if self._patched(GRANT_FAILURE_PATCH):
            # an answer still being written (a grant retrying) lands or fails before the run ends,
            # so its approver hears which
            await workflow.wait_condition(workflow.all_handlers_finished)
        self.reason = reason
        dropped = [say.instruction_id for say in self.cursor.pending_says if say.instruction_id is not None]
        if not dropped or not self._patched(DROPPED_SAYS_PATCH):
            dropped = []
        await self._act(Activities.finish_run, FinishInput(run_id=self.run_id, status=status.value, reason=reason,
                                                           dropped_instructions=dropped))
        self.status = status
        await self._notify_finished()
        return AgentRunResult(
            run_id=self.run_id, status=status.value, reason=reason, state_version=self.state.version,
            turns=self.cursor.turn, usage=self.cursor.usage,
        )

    async def _open_change_set(self) -> None:
        """At the run's first start only: a git workspace gets the run's own branch and worktree
        (an activity decides and creates them; a run started before this change keeps editing in
        place, and so does its every later generation)."""
        if self._patched(CHANGE_SET_PATCH):
            await self._act(Activities.open_change_set, RunRef(run_id=self.run_id), opt.OPEN_CHANGE_SET)

    def _use_fused_turn(self) -> bool:
        """The fused shape, except when replaying a history recorded before it (the benchmark
        overrides this to measure the stepwise shape beside it)."""
        return self._patched(FUSED_TURN_PATCH)

    def _should_continue_as_new(self) -> bool:
        every = self.spec.continue_as_new_every if self.spec else 50
        return workflow.info().is_continue_as_new_suggested() or self.turns_this_generation >= every
