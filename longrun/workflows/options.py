"""Timeouts and retry policies of every activity call, in one place.

Transient failures (a database restart, a worker killed mid-call, a 429) are retried by Temporal
with backoff; deterministic failures are made non-retryable by the activity boundary
(`longrun.activities.boundary`), so they fail at the first attempt whatever the policy says.
Heartbeat timeouts are short so that an activity on a killed worker is retried within seconds.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TypedDict

from temporalio.common import RetryPolicy


class ActivityOptions(TypedDict, total=False):
    """The keyword arguments of `workflow.execute_activity_method` that longrun sets."""

    start_to_close_timeout: timedelta
    schedule_to_close_timeout: timedelta
    heartbeat_timeout: timedelta
    retry_policy: RetryPolicy


STORE_RETRY = RetryPolicy(
    initial_interval=timedelta(milliseconds=500),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=15),
    maximum_attempts=20,
)

DEFAULT = ActivityOptions(start_to_close_timeout=timedelta(seconds=15), retry_policy=STORE_RETRY)
"""Store activities take milliseconds; 15 s bounds how long an attempt lost with a killed worker
waits before it is retried (`make faults` measured the tail at 60 s with a 60 s timeout)."""

GRANT = ActivityOptions(
    start_to_close_timeout=timedelta(seconds=15),
    retry_policy=RetryPolicy(
        initial_interval=timedelta(milliseconds=500),
        backoff_coefficient=2.0,
        maximum_interval=timedelta(seconds=4),
        maximum_attempts=5,
    ),
)
"""Writing a human's approval: a person waits for the answer at their terminal, so a database
that does not answer fails the approval within about 10 s (it stays answerable and is audited
as failed) instead of holding the person for minutes."""

MODEL_CALL = ActivityOptions(
    start_to_close_timeout=timedelta(minutes=10),
    heartbeat_timeout=timedelta(seconds=30),
    retry_policy=RetryPolicy(
        initial_interval=timedelta(seconds=1),
        backoff_coefficient=2.0,
        maximum_interval=timedelta(seconds=60),
        maximum_attempts=8,
    ),
)

RUN_TOOL = ActivityOptions(
    start_to_close_timeout=timedelta(minutes=15),
    heartbeat_timeout=timedelta(seconds=10),
    retry_policy=STORE_RETRY,
)

OPEN_CHANGE_SET = ActivityOptions(
    start_to_close_timeout=timedelta(minutes=5),  # `git worktree add` checks out the whole tree
    retry_policy=STORE_RETRY,
)

COMPACT = ActivityOptions(
    start_to_close_timeout=timedelta(minutes=5),
    heartbeat_timeout=timedelta(seconds=30),
    retry_policy=RetryPolicy(maximum_attempts=3),
)

NOTIFY = ActivityOptions(
    start_to_close_timeout=timedelta(seconds=15),
    schedule_to_close_timeout=timedelta(minutes=30),
    retry_policy=RetryPolicy(
        initial_interval=timedelta(seconds=1),
        backoff_coefficient=2.0,
        maximum_interval=timedelta(seconds=60),
        maximum_attempts=10,
    ),
)
"""Delivering a notification to a webhook (one POST of at most 10 s per attempt): retried 1, 2, 4,
... s apart, at most 60 s (or the receiver's Retry-After, at most 60 s), 10 attempts: the last
about 4 minutes after the first (11 at most, when every answer asks for 60 s), never past 30
minutes. The run does not wait for it (`longrun.workflows.notifications`)."""

NOTIFY_HANDOVER = timedelta(seconds=10)
"""Before continue-as-new, how long the run lets deliveries in flight finish; the rest restart in
the next run of the workflow."""

NOTIFY_DRAIN = timedelta(minutes=35)
"""After the run's end is recorded, how long the workflow waits for its notifications (the last
one's retries included) before it completes: longer than a delivery can take (`NOTIFY`)."""
