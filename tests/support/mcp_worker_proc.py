"""A worker in its own process for kill -9 tests of MCP calls: the run workflow, the real
activities, and the MCP-aware scripted agent (`McpAgent`) following a plan.

    python -m tests.support.mcp_worker_proc DB_URL TEMPORAL_ADDRESS TASK_QUEUE PLAN_JSON
"""

from __future__ import annotations

import asyncio
import json
import sys

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from longrun.service.worker import build_worker
from longrun.store import Store
from tests.support.mcp_policy import McpAgent


async def main(db_url: str, address: str, task_queue: str, plan_json: str) -> None:
    agent = McpAgent(plan=[[(tool, args) for tool, args in step] for step in json.loads(plan_json)])
    client = await Client.connect(address, data_converter=pydantic_data_converter)
    worker = build_worker(client, Store.from_url(db_url), provider_for=lambda _m: agent, task_queue=task_queue,
                          heartbeat_every=0.5)
    print("worker ready", flush=True)
    await worker.run()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
