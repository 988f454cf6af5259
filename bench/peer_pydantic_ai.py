"""The closest peer, measured beside longrun: Pydantic AI's Temporal durability.

`Agent(FunctionModel, capabilities=[TemporalDurability()])` in a `PydanticAIWorkflow`, on the same
Temporal dev server, the same number of turns and concurrent runs: an instant model that calls
one instant tool per turn, then answers. Each turn is two activities (the model request and the
tool call). The peer does none of longrun's work (no invariant gate, no compare-and-set task
state, no audit, no Postgres at all) and carries the whole conversation through workflow history,
so what it shows is the orchestration cost of a framework that keeps its state in Temporal.

Needs the bench-only extra (`pip install -e '.[bench]'`, which `make bench` does): importing this
module without it raises ImportError, which `bench.orchestration` reports as "peer not installed".
The agent and the workflow are at module level, as Temporal's sandbox re-imports the module.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.durable_exec.temporal import PydanticAIPlugin, PydanticAIWorkflow, TemporalDurability
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from temporalio import workflow
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.worker import Worker

AGENT_NAME = "bench_peer"
TOOL = "bench_instant"


@dataclass
class PeerClock:
    """When each model request of each run started, and how long the model took."""

    turns: int = 0
    starts: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


CLOCK = PeerClock()


def _instant_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """`CLOCK.turns` turns of one tool call each, then an answer; the run is named by its prompt."""
    t0 = time.perf_counter()
    key = next(
        str(p.content) for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, UserPromptPart)
    )
    step = sum(1 for m in messages if isinstance(m, ModelResponse))
    if step >= CLOCK.turns:
        response = ModelResponse(parts=[TextPart("Done.")])
    else:
        response = ModelResponse(parts=[ToolCallPart(tool_name=TOOL, args={"step": step}, tool_call_id=f"call_{step:04d}")])
    with CLOCK.lock:
        CLOCK.starts.setdefault(key, []).append((t0, time.perf_counter() - t0))
    return response


agent = Agent(FunctionModel(_instant_model), name=AGENT_NAME, capabilities=[TemporalDurability()])


@agent.tool_plain
def bench_instant(step: int) -> str:
    """Does nothing, at once (benchmark)."""
    return "ok"


@workflow.defn(name="bench.PeerPydanticAI")
class PeerWorkflow(PydanticAIWorkflow):
    __pydantic_ai_agents__ = [agent]  # noqa: RUF012 - the framework reads this class attribute

    @workflow.run
    async def run(self, prompt: str) -> str:
        result = await agent.run(prompt)
        return str(result.output)


async def history_bytes(client: Any, workflow_id: str) -> int:
    """The serialized size of a workflow's history events (what Temporal stores and replays)."""
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    return sum(e.ByteSize() for e in history.events)


async def runs(target: str, namespace: str, n: int, turns: int, threads: int) -> dict[str, Any]:
    """`n` concurrent peer runs of `turns` tool turns each, on their own client and worker."""
    client = await Client.connect(target, namespace=namespace, plugins=[PydanticAIPlugin()])
    queue = f"bench-peer-{uuid.uuid4().hex[:6]}"
    CLOCK.turns = turns
    CLOCK.starts.clear()
    keys = [f"peer-{n}-{i}-{uuid.uuid4().hex[:6]}" for i in range(n)]
    async with Worker(client, task_queue=queue, workflows=[PeerWorkflow],
                      activity_executor=ThreadPoolExecutor(max_workers=threads), max_concurrent_activities=threads):
        t0 = time.perf_counter()
        handles = await asyncio.gather(*(client.start_workflow(PeerWorkflow.run, k, id=k, task_queue=queue) for k in keys))
        cpu0 = time.process_time()
        results = await asyncio.gather(*(h.result() for h in handles), return_exceptions=True)
        cpu = time.process_time() - cpu0
        wall = time.perf_counter() - t0
        sizes = [await history_bytes(client, k) for k in keys[: min(n, 3)]]
        history = await client.get_workflow_handle(keys[0]).fetch_history()
    failed = [r for r in results if isinstance(r, BaseException) or r != "Done."]
    overheads = []
    for k in keys:
        for (a, model_time), (b, _) in itertools.pairwise(CLOCK.starts.get(k, [])):
            overheads.append(b - a - model_time)
    scheduled = sum(1 for e in history.events if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
    return {"wall": wall, "cpu": cpu, "failed": failed, "overheads": overheads, "history_bytes": max(sizes, default=0),
            "activities": scheduled, "turns_done": sum(max(0, len(CLOCK.starts.get(k, [])) - 1) for k in keys)}
