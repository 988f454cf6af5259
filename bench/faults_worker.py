"""A worker process for the fault harness (bench/faults.py): the run workflow and the real
activities on real Postgres and the Temporal dev server, a plan-driven model, `send_message` to
the harness's sink, and an activity interceptor that logs every attempt's start and end.

    python -m bench.faults_worker DB_URL TEMPORAL_ADDRESS TASK_QUEUE SINK_URL PLAN_JSON PAUSE MODE LOG

MODE is `reconcile` or `no-reconcile` (the control: its reconcile always says "did not happen").
Log lines (appended, flushed at once, so they survive a kill -9):

    <unix time> <pid> start|ok|err <run id> <activity type> <attempt>
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
from typing import Any

from temporalio import activity
from temporalio import client as temporal_client
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput, Interceptor

from tests.support.worker_proc import serve


class AttemptLog:
    def __init__(self, path: str) -> None:
        self.fh = open(path, "a", buffering=1)
        self.lock = threading.Lock()
        self.pid = os.getpid()

    def write(self, what: str) -> None:
        info = activity.info()
        line = f"{time.time():.3f} {self.pid} {what} {info.workflow_id} {info.activity_type} {info.attempt}\n"
        with self.lock:
            self.fh.write(line)
            self.fh.flush()


class _Inbound(ActivityInboundInterceptor):
    log: AttemptLog

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        self.log.write("start")
        try:
            result = await super().execute_activity(input)
        except BaseException:
            self.log.write("err")
            raise
        self.log.write("ok")
        return result


class LoggingInterceptor(temporal_client.Interceptor, Interceptor):
    """Given to the client: the worker picks up client interceptors that also intercept activities."""

    def __init__(self, log: AttemptLog) -> None:
        self.log = log

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        inbound = _Inbound(next)
        inbound.log = self.log
        return inbound


async def main(argv: list[str]) -> None:
    db_url, address, task_queue, sink_url, plan_json, pause, mode, log_path = argv[:8]
    await serve(
        db_url, address, task_queue, sink_url, plan_json, pause=float(pause), reconcile=mode != "no-reconcile",
        interceptors=[LoggingInterceptor(AttemptLog(log_path))],
    )


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
