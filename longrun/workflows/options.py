"""Timeouts and retry policies of every activity call, in one place.

Transient failures (a database restart, a worker killed mid-call, a 429) are retried by Temporal
with backoff; deterministic failures are raised non-retryable by the activities themselves.
Heartbeat timeouts are short so that an activity on a killed worker is retried within seconds.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio.common import RetryPolicy

STORE_RETRY = RetryPolicy(
    initial_interval=timedelta(milliseconds=500),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=15),
    maximum_attempts=20,
)

DEFAULT = dict(start_to_close_timeout=timedelta(seconds=15), retry_policy=STORE_RETRY)
"""Store activities take milliseconds; 15 s bounds how long an attempt lost with a killed worker
waits before it is retried (`make faults` measured the tail at 60 s with a 60 s timeout)."""

MODEL_CALL = dict(
    start_to_close_timeout=timedelta(minutes=10),
    heartbeat_timeout=timedelta(seconds=30),
    retry_policy=RetryPolicy(
        initial_interval=timedelta(seconds=1),
        backoff_coefficient=2.0,
        maximum_interval=timedelta(seconds=60),
        maximum_attempts=8,
    ),
)

RUN_TOOL = dict(
    start_to_close_timeout=timedelta(minutes=15),
    heartbeat_timeout=timedelta(seconds=10),
    retry_policy=STORE_RETRY,
)

COMPACT = dict(
    start_to_close_timeout=timedelta(minutes=5),
    heartbeat_timeout=timedelta(seconds=30),
    retry_policy=RetryPolicy(maximum_attempts=3),
)
