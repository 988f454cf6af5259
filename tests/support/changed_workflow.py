"""A deliberately changed AgentRunWorkflow (same name, turns without the reconcile activity), for
the Replayer test: replaying real histories with it must fail as non-deterministic."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from longrun.activities import names as A
    from longrun.models.io import AgentRunInput, AgentRunResult, ReconcileResult
    from longrun.workflows.agent_run import WORKFLOW_NAME, AgentRunWorkflow


@workflow.defn(name=WORKFLOW_NAME)
class ChangedAgentRunWorkflow(AgentRunWorkflow):
    @workflow.run
    async def run(self, inp: AgentRunInput) -> AgentRunResult:
        return await super().run(inp)

    async def _act(self, name, arg, result_type=None, *, options=None):
        if name == A.RECONCILE:  # the change: the reconcile step is gone
            return ReconcileResult(checked=0, confirmed=0, none=0, undecidable=[], state=self.state)
        return await super()._act(name, arg, result_type, options=options)
