"""The worker beside the console load benchmark (bench/console_load.py), in its own process: the
run workflow and the real activities on the benchmark's Postgres and Temporal dev server, with a
paced plan-driven model so one run writes audit events steadily for as long as the load lasts.

    python -m bench.console_worker DB_URL TEMPORAL_ADDRESS TASK_QUEUE PACE_SECONDS

Each model call sleeps PACE_SECONDS (a model's think time, shortened) and then asks for one
read-only tool: alternately `read_file` of the sample and `write_note`, so every turn writes a
model call, a gate verdict, a tool result and (for notes) a state commit.
"""

from __future__ import annotations

import asyncio
import sys
import time
from dataclasses import dataclass
from typing import Any

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from longrun.context import estimate_request
from longrun.models.blocks import ToolUseBlock
from longrun.models.provider import ModelInfo, ModelResponse, Usage
from longrun.service.worker import build_worker
from longrun.store import Store


@dataclass
class PacedProvider:
    pace: float

    def __post_init__(self) -> None:
        self.name = "bench-paced"
        self.info = ModelInfo(name="bench-paced", window=200_000, max_output=8_192)

    def complete(self, request: Any) -> Any:
        time.sleep(self.pace)
        step = sum(1 for m in request.messages if m.role == "assistant")
        tool, args = ("read_file", {"path": "README.md"}) if step % 2 else ("write_note", {"text": f"checked part {step}"})
        return ModelResponse(content=[ToolUseBlock(id=f"toolu_{step:05d}", name=tool, input=args)],
                             stop_reason="tool_use", usage=Usage(input_tokens=estimate_request(request), output_tokens=20),
                             model=self.name)

    def count_tokens(self, request: Any) -> int:
        return estimate_request(request)


async def main(db_url: str, address: str, task_queue: str, pace: str) -> None:
    client = await Client.connect(address, data_converter=pydantic_data_converter)
    store = Store.from_url(db_url)
    provider = PacedProvider(float(pace))
    worker = build_worker(client, store, provider_for=lambda _m: provider, task_queue=task_queue, heartbeat_every=0.5)
    print("worker ready", flush=True)
    await worker.run()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
