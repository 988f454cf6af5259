"""A control loop for the continue-as-new test: it runs turns of no-op activities and ignores
`is_continue_as_new_suggested()`, so the server terminates it at the history limit."""

from __future__ import annotations

from datetime import timedelta

from temporalio import activity, workflow


@activity.defn(name="control.noop")
async def noop(i: int) -> int:
    return i


@workflow.defn(name="control.LoopWithoutContinueAsNew")
class LoopWithoutContinueAsNew:
    @workflow.run
    async def run(self, turns: int) -> int:
        for i in range(turns):
            for _ in range(5):  # as many activities as one agent turn
                await workflow.execute_activity(noop, i, start_to_close_timeout=timedelta(seconds=10))
        return turns
