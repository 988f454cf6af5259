"""A worker in its own process, for kill -9 tests: the run workflow, the real activities on
real Postgres and the Temporal dev server, a plan-driven model, and `send_message` to a sink.

    python -m tests.support.worker_proc DB_URL TEMPORAL_ADDRESS TASK_QUEUE SINK_URL PLAN_JSON [PAUSE]
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Sequence
from typing import Any

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from longrun.service.worker import build_worker
from longrun.store import Store
from longrun.tools import default_registry
from tests.support.policy import PlanProvider
from tests.support.sink import send_tool


async def serve(
    db_url: str, address: str, task_queue: str, sink_url: str, plan_json: str, *, pause: float = 0.0,
    reconcile: bool = True, interceptors: Sequence[Any] = (),
) -> None:
    """Run the worker until the process is killed (bench/faults_worker.py adds an interceptor)."""
    plan = [[(tool, args) for tool, args in step] for step in json.loads(plan_json)]
    registry = default_registry()
    registry.register(send_tool(sink_url, pause_after_send=pause, reconcile=reconcile))
    client = await Client.connect(address, data_converter=pydantic_data_converter, interceptors=list(interceptors))
    store = Store.from_url(db_url)
    provider = PlanProvider(plan=plan)
    worker = build_worker(
        client, store, registry=registry, provider_for=lambda _m: provider, task_queue=task_queue, heartbeat_every=0.5
    )
    print("worker ready", flush=True)
    await worker.run()


async def main(argv: list[str]) -> None:
    pause = float(argv[5]) if len(argv) > 5 else 0.0
    reconcile = not (len(argv) > 6 and argv[6] == "no-reconcile")
    await serve(*argv[:5], pause=pause, reconcile=reconcile)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
