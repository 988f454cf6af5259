"""The worker interceptor that tells log lines which run and turn an activity is about.

Kept apart from `logs` so the CLI, which formats logs but runs no worker, does not import
`temporalio.worker`."""

from __future__ import annotations

from typing import Any

from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput, Interceptor

from longrun.telemetry.logs import LOG_FIELDS


class LogContextInterceptor(Interceptor):
    """Binds each activity's run id and turn (from its typed input) for the log lines it writes."""

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _BindRun(next)


class _BindRun(ActivityInboundInterceptor):
    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        arg = input.args[0] if input.args else None
        token = LOG_FIELDS.set({"run_id": getattr(arg, "run_id", None), "turn": getattr(arg, "turn", None)})
        try:  # the context is copied into the activity's thread, this binding with it
            return await self.next.execute_activity(input)
        finally:
            LOG_FIELDS.reset(token)


__all__ = ["LogContextInterceptor"]
