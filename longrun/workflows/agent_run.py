"""AgentRunWorkflow: the durable turn loop of one agent run.

Holds only small things: run id, head state_version, turn, counters, the paused flag and a
pending approval. Transcript text, tool output and state live in Postgres and cross Temporal as
ids (see longrun.models.io). One turn:

  reconcile -> model call -> for each tool call: gate -> (approval wait) -> intent -> run
  -> commit -> compaction hook -> continue-as-new when suggested or every N turns.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError, ChildWorkflowError

with workflow.unsafe.imports_passed_through():
    from longrun.activities import names as A
    from longrun.activities.errors import CONTEXT_OVERFLOW
    from longrun.models.audit import ApprovalExpired, ApprovalRejected, ApprovalRequested, RunControl
    from longrun.models.io import (
        AgentRunInput,
        AgentRunResult,
        ApproveInput,
        AskHumanInput,
        ChildCollected,
        ChildCreated,
        ChildInput,
        CollectChildInput,
        CommitTurnInput,
        CommitTurnResult,
        CompactInput,
        CompactResult,
        FinishInput,
        GateInput,
        GateResult,
        GrantInput,
        IntentInput,
        IntentResult,
        LoadRunResult,
        ModelCallInput,
        ModelCallResult,
        RecordEventInput,
        RejectInput,
        ReconcileResult,
        RunCursor,
        RunRef,
        RunToolInput,
        RunToolResult,
        SayInput,
        StateBrief,
        StatusQueryResult,
        SteerInput,
        SteerResult,
        ToolCallRef,
        ToolResultRef,
    )
    from longrun.models.provider import Usage
    from longrun.models.run import PendingApproval, RunStatus
    from longrun.workflows import options as opt

WORKFLOW_NAME = "longrun.AgentRun"
FINAL_REPORT_PATCH = "final-report-turn"
RESULT_TYPES = {
    A.LOAD_RUN: LoadRunResult,
    A.RECONCILE: ReconcileResult,
    A.MODEL_CALL: ModelCallResult,
    A.GATE: GateResult,
    A.RECORD_INTENT: IntentResult,
    A.RUN_TOOL: RunToolResult,
    A.COMMIT_TURN: CommitTurnResult,
    A.COMPACT: CompactResult,
    A.STEER: SteerResult,
    A.ASK_HUMAN: StateBrief,
    A.GRANT_APPROVAL: StateBrief,
    A.FINISH_RUN: type(None),
    A.RECORD_EVENT: type(None),
    A.CREATE_CHILD: ChildCreated,
    A.COLLECT_CHILD: ChildCollected,
}
MAX_OVERFLOW_RETRIES = 3


class _Stop(Exception):
    """Ends the loop with a final status (raised inside the workflow only)."""

    def __init__(self, status: str, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


@workflow.defn(name=WORKFLOW_NAME)
class AgentRunWorkflow:
    @workflow.init
    def __init__(self, inp: AgentRunInput) -> None:
        self.run_id = inp.run_id
        self.cursor = inp.cursor.model_copy(deep=True) if inp.cursor else RunCursor()
        self.status = RunStatus.paused if self.cursor.paused else RunStatus.running
        self.state = StateBrief(version=self.cursor.head_version, step="survey", next_action="inspect")
        self.spec: LoadRunResult | None = None
        self.pending: PendingApproval | None = None
        self.decision: tuple[str, str, str] | None = None  # (approved|rejected, approver, reason)
        self.deciding = False
        self.voided = ""
        self.cancel_requested = False
        self.compact_requested = False
        self.reason = ""
        self.turns_this_generation = 0
        self.children: list[str] = []
        self.final_turn_taken = False

    # ------------------------------------------------------------------ run
    @workflow.run
    async def run(self, inp: AgentRunInput) -> AgentRunResult:
        try:
            self.spec = await self._act(A.LOAD_RUN, RunRef(run_id=self.run_id), LoadRunResult)
            self.state = self.spec.state
            self.cursor.head_version = self.state.version
            if self.cursor.started_at is None:
                self.cursor.started_at = workflow.now()
            while True:
                await self._turn_boundary()
                await self._turn()
                if self._should_continue_as_new():
                    await workflow.wait_condition(workflow.all_handlers_finished)
                    self.cursor.paused = self.status is RunStatus.paused
                    self.cursor.generation += 1
                    workflow.continue_as_new(AgentRunInput(run_id=self.run_id, cursor=self.cursor))
        except _Stop as stop:
            return await self._finish(stop.status, stop.reason)
        except ActivityError as err:
            cause = err.cause
            message = str(cause.message if isinstance(cause, ApplicationError) else err)
            return await self._finish("failed", f"activity failed: {message}")
        except asyncio.CancelledError:
            await asyncio.shield(asyncio.ensure_future(self._finish("cancelled", "cancelled through Temporal")))
            raise

    async def _turn_boundary(self) -> None:
        """Between turns: cancellation, human instructions, pause, asking a human, stop, caps."""
        while True:
            if self.cancel_requested:
                raise _Stop("cancelled", "cancelled by an operator")
            if self.cursor.pending_says:
                say = self.cursor.pending_says.pop(0)
                steered = await self._act(
                    A.STEER, SteerInput(run_id=self.run_id, text=say.text, constraint=say.constraint, turn=self.cursor.turn)
                )
                self._set_state(steered.state)
                continue
            if self.status is RunStatus.paused:
                await workflow.wait_condition(
                    lambda: self.status is not RunStatus.paused or self.cancel_requested or bool(self.cursor.pending_says)
                )
                continue
            if self.state.next_action == "ask_human":
                self.status = RunStatus.paused
                self.reason = self.reason or "the agent asked for a human"
                continue
            if self.state.next_action == "stop":
                # one last turn for the agent's final report (runs recorded before this change
                # stopped at once: the patch keeps their histories replaying)
                if self.final_turn_taken or not workflow.patched(FINAL_REPORT_PATCH):
                    raise _Stop("completed", "the agent set next_action to stop")
                self.final_turn_taken = True
            self.reason = ""
            self._check_caps()
            return

    def _check_caps(self) -> None:
        caps = self.spec.caps if self.spec else None
        if caps is None:
            return
        c = self.cursor
        used = c.usage.total_input + c.usage.output_tokens
        elapsed = (workflow.now() - c.started_at).total_seconds() if c.started_at else 0
        for hit, what in (
            (c.turn >= caps.max_turns, f"turn cap reached ({caps.max_turns} turns)"),
            (c.model_calls >= caps.max_model_calls, f"model-call cap reached ({caps.max_model_calls} calls)"),
            (c.tool_calls >= caps.max_tool_calls, f"tool-call cap reached ({caps.max_tool_calls} calls)"),
            (used >= caps.max_tokens, f"token cap reached ({used} of {caps.max_tokens} tokens)"),
            (elapsed >= caps.max_wall_seconds, f"wall-time cap reached ({caps.max_wall_seconds} s)"),
        ):
            if hit:
                raise _Stop("failed", what)

    async def _turn(self) -> None:
        self.cursor.turn += 1
        self.turns_this_generation += 1
        turn = self.cursor.turn
        rec = await self._act(A.RECONCILE, RunRef(run_id=self.run_id))
        self._set_state(rec.state)
        if rec.undecidable:
            await self._ask_human(f"cannot tell whether effect(s) {', '.join(rec.undecidable)} happened; check and say how to go on")
            return

        model = await self._model_call(turn)
        results = await self._run_calls(turn, model.tool_calls)
        stage_boundary = any(call.name == "complete_stage" for call in model.tool_calls)
        self.cursor.tool_calls += len(model.tool_calls)

        commit = await self._act(
            A.COMMIT_TURN,
            CommitTurnInput(
                run_id=self.run_id,
                turn=turn,
                assistant_seq=model.assistant_seq,
                results=results,
                last_compaction_turn=self.cursor.last_compaction_turn,
                stage_boundary=stage_boundary or self.compact_requested,
                sent_tokens_estimated=None if model.replayed else model.estimated_tokens,
            ),
        )
        self._set_state(commit.state)
        trigger = "operator" if self.compact_requested else commit.compaction_trigger
        if trigger:
            await self._compact(turn, trigger)
        if not model.tool_calls and self.state.next_action != "ask_human":
            if self.final_turn_taken:
                raise _Stop("completed", "the agent set next_action to stop and gave its final report")
            raise _Stop("completed", "the agent ended its turn without tool calls")

    async def _model_call(self, turn: int) -> ModelCallResult:
        """Call the model; a provider overflow is answered by compaction under a budget below the
        size that overflowed, then a retry with that ceiling (hard enforcement)."""
        ceiling: int | None = None
        hard: int | None = None
        for attempt in range(MAX_OVERFLOW_RETRIES + 1):
            try:
                result = await self._act(
                    A.MODEL_CALL,
                    ModelCallInput(
                        run_id=self.run_id, turn=turn, overflow_retry=attempt, limit_override=ceiling, limit_hard=hard
                    ),
                    ModelCallResult,
                    options=opt.MODEL_CALL,
                )
                break
            except ActivityError as err:
                cause = err.cause
                if not (isinstance(cause, ApplicationError) and cause.type == CONTEXT_OVERFLOW):
                    raise
                if attempt == MAX_OVERFLOW_RETRIES:
                    raise _Stop("failed", "the provider still reports a context overflow after hard enforcement")
                suggested = cause.details[0] if cause.details else None
                if suggested:
                    ceiling = int(suggested) if ceiling is None else min(ceiling, int(suggested))
                most = cause.details[1] if len(cause.details) > 1 else None
                if most:
                    hard = int(most) if hard is None else min(hard, int(most))
                await self._compact(turn, "overflow", budget=ceiling)
        if not result.replayed:
            self.cursor.model_calls += 1
            self.cursor.usage = self.cursor.usage + result.usage
        return result

    async def _compact(self, turn: int, trigger: str, budget: int | None = None) -> None:
        result = await self._act(
            A.COMPACT,
            CompactInput(
                run_id=self.run_id, turn=turn, base_state_version=self.state.version, trigger=trigger, budget=budget
            ),
            options=opt.COMPACT,
        )
        self.compact_requested = False
        if result.outcome in ("applied", "summary_rejected"):
            self.cursor.last_compaction_turn = turn
            self.cursor.last_compaction = result.report
        elif result.report is not None and result.outcome == "stale":
            self.cursor.last_compaction = result.report

    async def _run_calls(self, turn: int, calls: list[ToolCallRef]) -> list[ToolResultRef]:
        """Tool calls one after another, in order; `task` calls (subagents) run together, at
        most `subagent_width` at once. Results keep the calls' order."""
        results: dict[int, ToolResultRef] = {}
        tasks = [c for c in calls if c.name == "task"]
        for call in calls:
            if call.name == "task":
                continue
            if self.cancel_requested:
                results[call.index] = self._error(call, "not run: the run was cancelled")
                continue
            results[call.index] = await self._tool_call(turn, call)
        if tasks:
            width = asyncio.Semaphore(self.spec.subagent_width if self.spec else 4)

            async def bounded(call: ToolCallRef) -> ToolResultRef:
                async with width:
                    return await self._subagent(turn, call)

            for call, result in zip(tasks, await asyncio.gather(*(bounded(c) for c in tasks))):
                results[call.index] = result
        return [results[c.index] for c in calls]

    async def _subagent(self, turn: int, call: ToolCallRef) -> ToolResultRef:
        """One `task` call: a child run with a clean context; its failure is a string, never an
        exception that would cancel its siblings."""
        if self.cancel_requested:
            return self._error(call, "not run: the run was cancelled")
        gate = await self._gate(turn, call)
        if gate.verdict != "allow":
            return self._error(call, f"denied by the invariant gate (rule {gate.rule}): {gate.reason}")
        created = await self._act(A.CREATE_CHILD, ChildInput(run_id=self.run_id, turn=turn, call=call))
        child_id = created.child_run_id
        self.children.append(child_id)
        failure: str | None = None
        try:
            outcome = await workflow.execute_child_workflow(
                WORKFLOW_NAME,
                AgentRunInput(run_id=child_id),
                id=child_id,
                task_queue=workflow.info().task_queue,
                result_type=AgentRunResult,
            )
            if outcome.status != "completed":
                failure = f"{outcome.status}: {outcome.reason}"
        except ChildWorkflowError as err:
            cause = err.cause
            failure = str(getattr(cause, "message", None) or cause or err)
        finally:
            self.children.remove(child_id)
        collected = await self._act(
            A.COLLECT_CHILD, CollectChildInput(run_id=self.run_id, child_run_id=child_id, call=call, failure=failure)
        )
        self.cursor.usage = self.cursor.usage + collected.usage
        return collected.result

    async def _tool_call(self, turn: int, call: ToolCallRef) -> ToolResultRef:
        gate = await self._gate(turn, call)
        if gate.verdict == "needs_approval":
            refusal = await self._wait_for_approval(gate)
            if refusal:
                return self._error(call, refusal)
            gate = await self._gate(turn, call, proposed_version=gate.state_version)
        if gate.verdict != "allow":
            if gate.rule == "approval" and "expired" in gate.reason:
                await self._ask_human(f"the approval for {gate.tool} expired before it was used")
            return self._error(call, f"denied by the invariant gate (rule {gate.rule}): {gate.reason}")
        if gate.kind == "effect":
            intent = await self._act(
                A.RECORD_INTENT,
                IntentInput(
                    run_id=self.run_id,
                    call=call,
                    action_id=gate.action_id,
                    tool=gate.tool,
                    expected_version=self.state.version,
                    action_hash=gate.action_hash,
                    uses_approval=gate.rule == "approval",
                ),
            )
            self.state = self.state.model_copy(update={"version": intent.state_version})
            self.cursor.head_version = intent.state_version
        try:
            ran = await self._act(
                A.RUN_TOOL,
                RunToolInput(
                    run_id=self.run_id, turn=turn, call=call, action_id=gate.action_id,
                    expected_version=self.state.version, now=workflow.now(),
                ),
                options=opt.RUN_TOOL,
            )
        except ActivityError as err:
            if isinstance(err.cause, ApplicationError) and err.cause.type == "EffectUndecidable":
                await self._ask_human(err.cause.message)
                return self._error(call, f"outcome unknown, a human must check: {err.cause.message}")
            raise
        self._set_state(ran.state)
        return ran.result

    async def _gate(self, turn: int, call: ToolCallRef, proposed_version: int | None = None) -> GateResult:
        return await self._act(
            A.GATE,
            GateInput(
                run_id=self.run_id, turn=turn, call=call, expected_version=self.state.version,
                now=workflow.now(), proposed_version=proposed_version,
            ),
            GateResult,
        )

    async def _wait_for_approval(self, gate: GateResult) -> str | None:
        """Wait for approve/reject, the request's expiry, a new constraint or cancellation.
        Returns None when approved, else the error text the model gets."""
        ttl = self.spec.approval_ttl_seconds if self.spec else 1800
        now = workflow.now()
        self.pending = PendingApproval(
            approval_id="apr-" + gate.action_hash[:16],
            tool=gate.tool,
            arguments=gate.arguments_preview,
            action_hash=gate.action_hash,
            state_version=gate.state_version,
            requested_at=now,
            expires_at=now + timedelta(seconds=ttl),
        )
        self.decision, self.voided, self.deciding = None, "", False
        await self._record(
            ApprovalRequested(
                approval_id=self.pending.approval_id, tool=gate.tool, arguments=gate.arguments_preview,
                action_hash=gate.action_hash, state_version=gate.state_version,
            )
        )
        self.status = RunStatus.waiting_approval
        try:
            await workflow.wait_condition(
                lambda: self.decision is not None or self.cancel_requested or bool(self.voided),
                timeout=timedelta(seconds=ttl),
            )
        except asyncio.TimeoutError:
            if self.deciding:
                await workflow.wait_condition(lambda: self.decision is not None)
        pending, self.pending = self.pending, None
        if self.status is RunStatus.waiting_approval:  # a pause that arrived meanwhile stays
            self.status = RunStatus.running
        if self.decision is not None:
            verdict, approver, reason = self.decision
            if verdict == "approved":
                return None
            return f"approval rejected by {approver}: {reason}"
        if self.cancel_requested:
            return "not run: the run was cancelled while waiting for approval"
        if self.voided:
            return f"approval request {pending.approval_id} voided: {self.voided}; propose the action again"
        await self._record(ApprovalExpired(approval_id=pending.approval_id))
        await self._ask_human(f"approval request {pending.approval_id} for {pending.tool} expired unanswered")
        return f"approval request {pending.approval_id} expired unanswered; the run waits for a human"

    async def _ask_human(self, reason: str) -> None:
        self.reason = reason
        self._set_state(await self._act(A.ASK_HUMAN, AskHumanInput(run_id=self.run_id, reason=reason)))

    async def _finish(self, status: str, reason: str) -> AgentRunResult:
        self.reason = reason
        await self._act(A.FINISH_RUN, FinishInput(run_id=self.run_id, status=status, reason=reason))
        self.status = RunStatus(status)
        return AgentRunResult(
            run_id=self.run_id, status=status, reason=reason, state_version=self.state.version,
            turns=self.cursor.turn, usage=self.cursor.usage,
        )

    # ------------------------------------------------------------ helpers
    async def _act(self, name: str, arg, result_type=None, *, options: dict | None = None):
        rtype = result_type or RESULT_TYPES[name]
        return await workflow.execute_activity(name, arg, result_type=rtype, **(options or opt.DEFAULT))

    async def _record(self, event) -> None:
        await self._act(A.RECORD_EVENT, RecordEventInput(run_id=self.run_id, event=event))

    def _set_state(self, brief: StateBrief) -> None:
        self.state = brief
        self.cursor.head_version = brief.version

    @staticmethod
    def _error(call: ToolCallRef, text: str) -> ToolResultRef:
        return ToolResultRef(call_id=call.call_id, tool=call.name, is_error=True, error_text=text[:4000])

    def _should_continue_as_new(self) -> bool:
        every = self.spec.continue_as_new_every if self.spec else 50
        return workflow.info().is_continue_as_new_suggested() or self.turns_this_generation >= every

    # ---------------------------------------------------- queries, updates
    @workflow.query
    def status_query(self) -> StatusQueryResult:
        return StatusQueryResult(
            run_id=self.run_id,
            model=self.spec.model if self.spec else "",
            status=self.status.value,
            state=self.state,
            turn=self.cursor.turn,
            pending_approval=self.pending,
            usage=self.cursor.usage,
            model_calls=self.cursor.model_calls,
            tool_calls=self.cursor.tool_calls,
            last_compaction=self.cursor.last_compaction,
            reason=self.reason,
            children=list(self.children),
        )

    def _check_decidable(self, approval_id: str, approver: str) -> None:
        if self.status.finished:
            raise ApplicationError(f"run {self.run_id} is {self.status.value}; nothing to approve")
        if self.pending is None:
            raise ApplicationError(f"run {self.run_id} has no pending approval (status {self.status.value})")
        if approval_id != self.pending.approval_id:
            raise ApplicationError(
                f"approval {approval_id!r} does not match the pending action: the pending approval is "
                f"{self.pending.approval_id} ({self.pending.tool}, action hash {self.pending.action_hash[:16]}...)"
            )
        approvers = self.spec.approvers if self.spec else []
        if approver not in approvers:
            raise ApplicationError(
                f"{approver!r} is not an approver of run {self.run_id}; approvers: {', '.join(approvers) or '(none)'}"
            )
        if self.decision is not None or self.deciding:
            raise ApplicationError(f"approval {approval_id} was already decided")
        if workflow.now() >= self.pending.expires_at:
            raise ApplicationError(f"approval {approval_id} expired at {self.pending.expires_at.isoformat()}; it can no longer be used")

    @workflow.update(name="approve")
    async def approve(self, inp: ApproveInput) -> str:
        assert self.pending is not None and self.spec is not None
        self.deciding = True
        pending = self.pending
        now = workflow.now()
        ttl = inp.ttl_seconds or self.spec.approval_ttl_seconds
        brief = await self._act(
            A.GRANT_APPROVAL,
            GrantInput(
                run_id=self.run_id, approval_id=pending.approval_id, approver=inp.approver,
                action_hash=pending.action_hash, tool=pending.tool, approved_at=now,
                expires_at=now + timedelta(seconds=ttl),
            ),
        )
        self._set_state(brief)
        self.decision = ("approved", inp.approver, "")
        return f"approved {pending.approval_id} ({pending.tool}) as {inp.approver}, valid {ttl} s"

    @approve.validator
    def _validate_approve(self, inp: ApproveInput) -> None:
        self._check_decidable(inp.approval_id, inp.approver)

    @workflow.update(name="reject")
    async def reject(self, inp: RejectInput) -> str:
        assert self.pending is not None
        self.deciding = True
        pending = self.pending
        await self._record(ApprovalRejected(approval_id=pending.approval_id, approver=inp.approver, reason=inp.reason))
        self.decision = ("rejected", inp.approver, inp.reason)
        return f"rejected {pending.approval_id} ({pending.tool}) as {inp.approver}"

    @reject.validator
    def _validate_reject(self, inp: RejectInput) -> None:
        self._check_decidable(inp.approval_id, inp.approver)

    def _refuse_if_finished(self, what: str) -> None:
        if self.status.finished:
            raise ApplicationError(f"cannot {what}: run {self.run_id} is {self.status.value}")

    @workflow.update(name="pause")
    async def pause(self) -> str:
        self.status = RunStatus.paused
        await self._record(RunControl(action="pause"))
        return "paused: the run stops at the next turn boundary"

    @pause.validator
    def _validate_pause(self) -> None:
        self._refuse_if_finished("pause")

    @workflow.update(name="resume")
    async def resume(self) -> str:
        if self.status is RunStatus.paused and self.state.next_action != "ask_human":
            self.status = RunStatus.running
        await self._record(RunControl(action="resume"))
        return "resumed" if self.status is not RunStatus.paused else "the run waits for a human instruction: use `longrun say`"

    @resume.validator
    def _validate_resume(self) -> None:
        self._refuse_if_finished("resume")

    @workflow.update(name="cancel")
    async def cancel(self) -> str:
        self.cancel_requested = True
        await self._record(RunControl(action="cancel"))
        return "cancelling: the run stops at the next safe point"

    @cancel.validator
    def _validate_cancel(self) -> None:
        self._refuse_if_finished("cancel")

    @workflow.update(name="say")
    async def say(self, inp: SayInput) -> str:
        self.cursor.pending_says.append(inp)
        if self.status is RunStatus.paused and self.state.next_action == "ask_human":
            self.status = RunStatus.running
        if inp.constraint and self.pending is not None and self.decision is None:
            self.voided = "a new constraint arrived while it waited"
        return "instruction queued for the next turn" + (" as a constraint" if inp.constraint else "")

    @say.validator
    def _validate_say(self, inp: SayInput) -> None:
        self._refuse_if_finished("say anything")

    @workflow.update(name="compact_now")
    async def compact_now(self) -> str:
        self.compact_requested = True
        return "compaction requested for the end of this turn"

    @compact_now.validator
    def _validate_compact(self) -> None:
        self._refuse_if_finished("compact")
