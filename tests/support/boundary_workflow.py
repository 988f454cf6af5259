"""A workflow that calls one real activity, under a retry policy the test chooses, and reports
how it failed: for counting the attempts Temporal makes for each class of error."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from pydantic import BaseModel
from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError


class CallInput(BaseModel):
    activity: str
    arg: dict[str, Any]
    task_queue: str
    max_attempts: int = 5


class CallOutcome(BaseModel):
    ok: bool
    error_type: str | None = None
    non_retryable: bool | None = None
    message: str = ""


@workflow.defn(name="test.CallActivity")
class CallActivity:
    @workflow.run
    async def run(self, inp: CallInput) -> CallOutcome:
        try:
            await workflow.execute_activity(
                inp.activity,
                inp.arg,
                task_queue=inp.task_queue,
                start_to_close_timeout=timedelta(seconds=10),
                retry_policy=RetryPolicy(
                    initial_interval=timedelta(milliseconds=50), backoff_coefficient=1.0, maximum_attempts=inp.max_attempts
                ),
            )
        except ActivityError as err:
            cause = err.cause
            if isinstance(cause, ApplicationError):
                return CallOutcome(ok=False, error_type=cause.type, non_retryable=cause.non_retryable, message=cause.message)
            return CallOutcome(ok=False, message=str(err))
        return CallOutcome(ok=True)
