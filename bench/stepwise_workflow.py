"""The run workflow in its stepwise shape (reconcile, model call, gate / intent / run per call,
commit: about five activities per plain turn), for measuring the fused shape against it in the
same benchmark run. Production runs take the stepwise shape only when they replay a history
recorded before the fused turn; everything else about the workflow is the same class."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from longrun.models.io import AgentRunInput, AgentRunResult
    from longrun.workflows.agent_run import AgentRunWorkflow

STEPWISE_WORKFLOW = "bench.AgentRunStepwise"


@workflow.defn(name=STEPWISE_WORKFLOW)
class StepwiseAgentRunWorkflow(AgentRunWorkflow):
    @workflow.run
    async def run(self, inp: AgentRunInput) -> AgentRunResult:
        return await super().run(inp)

    def _use_fused_turn(self) -> bool:
        return False
