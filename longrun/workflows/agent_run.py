"""AgentRunWorkflow: the durable turn loop of one agent run, declared to Temporal.

The loop itself is `turn_loop.AgentRunLoop` (passed through the sandbox, see its docstring for
why); this module holds only the declaration. The worker's runner passes it through too
(`runner.py`); a plain sandbox (a Replayer without that runner) imports it for every run. The
approval and control handlers are in `approvals` and `controls`, the tool calls in `tool_calls`.
"""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from longrun.models.io import AgentRunInput, AgentRunResult
    from longrun.workflows.turn_loop import (
        CHANGE_SET_PATCH,
        COMPACTION_FAILURE_PATCH,
        FINAL_REPORT_PATCH,
        FUSED_TURN_PATCH,
        STAGE_BOUNDARY_PATCH,
        WORKFLOW_NAME,
        AgentRunLoop,
    )

__all__ = [
    "CHANGE_SET_PATCH", "COMPACTION_FAILURE_PATCH", "FINAL_REPORT_PATCH", "FUSED_TURN_PATCH", "STAGE_BOUNDARY_PATCH", "WORKFLOW_NAME",
    "AgentRunWorkflow",
]


@workflow.defn(name=WORKFLOW_NAME)
class AgentRunWorkflow(AgentRunLoop):
    @workflow.init
    def __init__(self, inp: AgentRunInput) -> None:
        super().__init__(inp)

    @workflow.run
    async def run(self, inp: AgentRunInput) -> AgentRunResult:
        return await self._run()
