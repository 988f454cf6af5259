"""One turn's tool calls: in order, each through the invariant gate; subagents (`task`) together.

Two shapes, chosen once per workflow execution (`AgentRunWorkflow.fused`):
- fused (current): one `tool_step` activity gates a call and, when the gate allows it without a
  human, writes an effect's intent and runs it, in one round trip;
- stepwise (histories recorded before `FUSED_TURN_PATCH`): `gate`, `record_intent`, `run_tool`.
A call that needs approval takes the stepwise path after the wait in both shapes.

Which version each step writes on: the intent on the version the gate checked, a state tool on
the same; when the head moved meanwhile nothing is written and the call goes back through the
gate, on the new head (at most `MAX_REGATES` times).
"""

from __future__ import annotations

import asyncio

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError, ChildWorkflowError

with workflow.unsafe.imports_passed_through():
    from longrun.activities.boundary import ErrorType, error_type
    from longrun.activities.contract import Activities
    from longrun.models.audit import ErrorRecorded
    from longrun.models.gate import GateRule
    from longrun.models.io import (
        AgentRunInput,
        AgentRunResult,
        ChildInput,
        CollectChildInput,
        GateInput,
        GateResult,
        IntentInput,
        RunRef,
        RunToolInput,
        ToolCallRef,
        ToolResultRef,
        ToolStepInput,
    )
    from longrun.workflows import options as opt
    from longrun.workflows.approvals import ApprovalsMixin
    from longrun.workflows.interface import WORKFLOW_NAME

MAX_REGATES = 3
"""How often one call goes back through the gate because the head moved under it."""
MCP_TOOLS_PATCH = "mcp-tools"
"""A run whose spec names MCP servers lists their tools at its start (`list_mcp_tools`)."""
RUN_TOOLS_PATCH = "run-tools"
"""A run records the tools it is offered at its start (`record_run_tools`), after its MCP listing."""


class ToolCallsMixin(ApprovalsMixin):
    fused: bool

    async def _list_mcp_tools(self) -> None:
        """Once per run, before its first turn: its MCP servers' tools into Postgres (the
        workflow keeps only the listing's state version; the tools' text never enters history)."""
        if self.spec is None or not self.spec.mcp_listing_needed or not self._patched(MCP_TOOLS_PATCH):
            return
        listed = await self._act(Activities.list_mcp_tools, RunRef(run_id=self.run_id), opt.RUN_TOOL)
        self._set_state(listed.state)

    async def _record_tools(self) -> None:
        """Each generation, after the MCP listing: the run's tool list into Postgres (recorded once;
        a later generation finds its hash in the state), so every worker holds the run to it."""
        if not self._patched(RUN_TOOLS_PATCH):
            return
        recorded = await self._act(Activities.record_run_tools, RunRef(run_id=self.run_id))
        self._set_state(recorded.state)

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
            results[call.index] = await (self._tool_step(turn, call) if self.fused else self._tool_call(turn, call))
        if tasks:
            width = asyncio.Semaphore(self.spec.subagent_width if self.spec else 4)

            async def bounded(call: ToolCallRef) -> ToolResultRef:
                async with width:
                    return await self._subagent(turn, call)

            for call, result in zip(tasks, await asyncio.gather(*(bounded(c) for c in tasks)), strict=False):
                results[call.index] = result
        return [results[c.index] for c in calls]

    async def _subagent(self, turn: int, call: ToolCallRef) -> ToolResultRef:
        """One `task` call: a child run with a clean context; its failure is a string, never an
        exception that would cancel its siblings."""
        if self.cancel_requested:
            return self._error(call, "not run: the run was cancelled")
        gate = await self._gate(turn, call)
        if gate.verdict != "allow":
            return self._denied(call, gate)
        created = await self._act(Activities.create_child, ChildInput(run_id=self.run_id, turn=turn, call=call))
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
            Activities.collect_child, CollectChildInput(run_id=self.run_id, child_run_id=child_id, call=call, failure=failure)
        )
        self.cursor.usage = self.cursor.usage + collected.usage
        return collected.result

    async def _tool_step(self, turn: int, call: ToolCallRef) -> ToolResultRef:
        """The fused shape: gate and (when no human is needed) run, in one activity."""
        try:
            step = await self._act(
                Activities.tool_step,
                ToolStepInput(run_id=self.run_id, turn=turn, call=call, expected_version=self.state.version, now=workflow.now()),
                opt.RUN_TOOL,
            )
        except ActivityError as err:
            return await self._undecidable_or_raise(call, err)
        if step.ran is not None:
            self._set_state(step.ran.state)
            return step.ran.result
        return await self._after_gate(turn, call, step.gate)

    async def _tool_call(self, turn: int, call: ToolCallRef) -> ToolResultRef:
        """The stepwise shape: gate, then intent and run as separate activities."""
        return await self._after_gate(turn, call, await self._gate(turn, call))

    async def _after_gate(self, turn: int, call: ToolCallRef, gate: GateResult) -> ToolResultRef:
        proposed: int | None = None
        if gate.verdict == "needs_approval":
            refusal = await self._wait_for_approval(gate, call)
            if refusal:
                return self._error(call, refusal)
            proposed = gate.state_version  # bound in the action hash: every re-check uses it
            gate = await self._gate(turn, call, proposed_version=proposed)
        for _ in range(MAX_REGATES):
            if gate.verdict != "allow":
                if self._approval_expired(gate):
                    await self._ask_human(f"the approval for {gate.tool} expired before it was used")
                return self._denied(call, gate)
            version = gate.state_version
            if gate.kind == "effect":
                intent = await self._act(
                    Activities.record_intent,
                    IntentInput(
                        run_id=self.run_id, call=call, action_id=gate.action_id, tool=gate.tool,
                        expected_version=gate.state_version, action_hash=gate.action_hash,
                        uses_approval=gate.rule is GateRule.approval, scope_id=gate.scope_id,
                    ),
                )
                if intent.outcome == "stale" and intent.state is not None:
                    self._set_state(intent.state)
                    gate = await self._gate(turn, call, proposed_version=proposed)
                    continue
                self.state = self.state.model_copy(update={"version": intent.state_version})
                self.cursor.head_version = version = intent.state_version
            try:
                ran = await self._act(
                    Activities.run_tool,
                    RunToolInput(
                        run_id=self.run_id, turn=turn, call=call, action_id=gate.action_id,
                        expected_version=version, now=workflow.now(),
                    ),
                    opt.RUN_TOOL,
                )
            except ActivityError as err:
                return await self._undecidable_or_raise(call, err)
            self._set_state(ran.state)
            if ran.outcome == "stale":
                gate = await self._gate(turn, call, proposed_version=proposed)
                continue
            return ran.result
        reason = f"not run: the task state kept changing while this call was checked ({MAX_REGATES} times); call it again"
        await self._record(ErrorRecorded(where=f"tool call {gate.action_id}", message=reason))
        return self._error(call, reason)

    async def _undecidable_or_raise(self, call: ToolCallRef, err: ActivityError) -> ToolResultRef:
        """An effect nobody can decide goes to a human; any other failure ends the run."""
        if error_type(err) is not ErrorType.EFFECT_UNDECIDABLE:
            raise err
        message = err.cause.message if isinstance(err.cause, ApplicationError) else str(err)
        await self._ask_human(message)
        return self._error(call, f"outcome unknown, a human must check: {message}")

    @staticmethod
    def _approval_expired(gate: GateResult) -> bool:
        if gate.rule is GateRule.approval_expired:
            return True
        # histories recorded before the rule had its own name said so only in the reason
        return gate.rule is GateRule.approval and gate.verdict == "deny" and "has expired" in gate.reason

    def _denied(self, call: ToolCallRef, gate: GateResult) -> ToolResultRef:
        return self._error(call, f"denied by the invariant gate (rule {gate.rule.value}): {gate.reason}")

    async def _gate(self, turn: int, call: ToolCallRef, proposed_version: int | None = None) -> GateResult:
        return await self._act(
            Activities.gate,
            GateInput(
                run_id=self.run_id, turn=turn, call=call, expected_version=self.state.version,
                now=workflow.now(), proposed_version=proposed_version,
            ),
        )
