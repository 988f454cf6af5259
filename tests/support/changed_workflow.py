"""A deliberately changed AgentRunWorkflow (same name, approval requests no longer audited), for
the Replayer test: replaying real histories with it must fail as non-deterministic. Every
recorded history asks for an approval, in the fused shape and in the stepwise one alike."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from longrun.models.audit import ApprovalRequested, AuditEvent
    from longrun.models.io import AgentRunInput, AgentRunResult
    from longrun.workflows.agent_run import WORKFLOW_NAME, AgentRunWorkflow


@workflow.defn(name=WORKFLOW_NAME)
class ChangedAgentRunWorkflow(AgentRunWorkflow):
    @workflow.run
    async def run(self, inp: AgentRunInput) -> AgentRunResult:
        return await super().run(inp)

    async def _record(self, event: AuditEvent) -> None:
        if isinstance(event, ApprovalRequested):  # the change: the request is not audited
            return
        await super()._record(event)
