"""AgentRunWorkflow with a faster notification retry schedule (same name, same behaviour
otherwise), so notification tests take seconds: attempts 1.5 s, then 3 s apart, 4 attempts at
most (production: `options.NOTIFY`, 1 s doubling to 60 s, 10 attempts), and a continue-as-new
that waits 0.5 s for deliveries in flight (production: `options.NOTIFY_HANDOVER`, 10 s)."""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from longrun.models.io import AgentRunInput, AgentRunResult
    from longrun.workflows import options as opt
    from longrun.workflows.agent_run import WORKFLOW_NAME, AgentRunWorkflow

FAST_NOTIFY = opt.ActivityOptions(
    start_to_close_timeout=timedelta(seconds=12),
    schedule_to_close_timeout=timedelta(minutes=2),
    retry_policy=RetryPolicy(
        initial_interval=timedelta(seconds=1.5), backoff_coefficient=2.0, maximum_interval=timedelta(seconds=3),
        maximum_attempts=4,
    ),
)


@workflow.defn(name=WORKFLOW_NAME)
class FastNotifyWorkflow(AgentRunWorkflow):
    notify_options = FAST_NOTIFY
    notify_handover = timedelta(seconds=0.5)

    @workflow.run
    async def run(self, inp: AgentRunInput) -> AgentRunResult:
        return await super().run(inp)
