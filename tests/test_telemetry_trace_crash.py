"""One run, one trace, through a worker killed with kill -9 and the retry on a new worker.

The client's spans go to the SDK's in-memory exporter (this process, `configure_tracing(exporter=)`).
The workers are other processes, started with the standard `OTEL_EXPORTER_OTLP_ENDPOINT`, and
export over OTLP/HTTP to a local receiver that decodes the protobuf (tests/support/otlp_receiver.py):
what a collector would get. The worker process is tests/support/worker_proc.py unchanged; its
client has no interceptor, so the spans prove `build_worker` adds the tracing itself.

The killed worker's unfinished spans are lost (it never ended them); everything else lines up
under the trace of the `start`, and no span, from longrun or Temporal, holds the canary secret,
the objective or the system prompt.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from longrun.activities.prompts import SYSTEM_PROMPT
from longrun.client.connection import connect_temporal
from longrun.models.spec import RunSpec
from longrun.telemetry import configure_tracing
from tests.support.harness import Harness
from tests.support.otlp_receiver import OtlpReceiver, ReceivedSpan
from tests.support.sink import Sink

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
CANARY = "sk-ant-api03-" + "Zq7" * 20 + "AA"
OBJECTIVE = "tell the team the plover migration finished (canary text: plover-objective-4471)"
PLAN = [
    [["send_message", {"text": f"first, key {CANARY}"}]],
    [["send_message", {"text": "second plover-argument-9912"}]],
    [["set_next_action", {"next_action": "stop"}]],
]
SECRETS = (CANARY, "plover-objective-4471", "plover-argument-9912", SYSTEM_PROMPT[:40])


def spawn_worker(db_url: str, address: str, task_queue: str, sink: Sink, pause: float, log: Path,
                 endpoint: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_BSP_SCHEDULE_DELAY": "50",
           "OTEL_SERVICE_NAME": "longrun-worker"}
    with open(log, "a") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "tests.support.worker_proc", db_url, address, task_queue, sink.url,
             json.dumps(PLAN), str(pause), "reconcile"],
            cwd=REPO, stdout=out, stderr=subprocess.STDOUT, env=env,
        )


async def wait_until(predicate: Any, timeout: float, what: str) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        if predicate():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in strings(v)]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in [str(k), *strings(v)]]
    return []


def tree(spans: list[ReceivedSpan]) -> str:
    """The trace as an indented text dump (docs/OBSERVABILITY.md shows one)."""
    children: dict[str, list[ReceivedSpan]] = {}
    ids = {s.span_id for s in spans}
    for s in spans:
        children.setdefault(s.parent_id if s.parent_id in ids else "", []).append(s)
    lines: list[str] = []

    def walk(parent: str, depth: int) -> None:
        for s in children.get(parent, []):
            shown = {k: v for k, v in s.attributes.items() if k.startswith(("gen_ai.", "longrun.")) and k != "longrun.run_id"}
            lines.append(f"{'  ' * depth}{s.name}  [{s.service}]  {json.dumps(shown, sort_keys=True)}")
            walk(s.span_id, depth + 1)

    walk("", 0)
    return "\n".join(lines)


@pytest.mark.timeout(240)
async def test_one_trace_through_a_kill_9_and_the_retry(store, db_url, temporal_env, tmp_path):
    memory = InMemorySpanExporter()
    tracing = configure_tracing(exporter=memory, service_name="longrun-client")
    assert tracing is not None
    receiver, sink = OtlpReceiver(), Sink()
    task_queue = f"trace-{uuid.uuid4().hex[:8]}"
    address = temporal_env.client.service_client.config.target_host
    first = spawn_worker(db_url, address, task_queue, sink, 30.0, tmp_path / "worker1.log", receiver.url)
    second = None
    try:
        client = await connect_temporal(address, "default")  # the client every longrun command uses
        h = Harness(client, store, task_queue)
        ws = tmp_path / "ws"
        ws.mkdir()
        run_id = await h.start(RunSpec(objective=OBJECTIVE, workspace=str(ws)))
        await wait_until(lambda: len(sink.deliveries) == 1, 60, "the first send to reach the sink")
        await wait_until(lambda: {"RunWorkflow:longrun.AgentRun", "RunActivity:longrun.turn"}
                         <= {s.name for s in receiver.received()}, 10,
                         f"the first worker's workflow and turn spans, got {[s.name for s in receiver.received()]}")
        os.kill(first.pid, signal.SIGKILL)
        first.wait(10)
        second = spawn_worker(db_url, address, task_queue, sink, 0.0, tmp_path / "worker2.log", receiver.url)
        result = await h.result(run_id, timeout=120)
        assert result.status == "completed", result.reason
        assert sorted(sink.counts().values()) == [1, 1], "each effect once at its target"
        await wait_until(lambda: any(s.name == "execute_tool set_next_action" for s in receiver.received()), 20,
                         "the last tool call's span")
        await asyncio.sleep(0.5)  # the batch after it
    finally:
        for proc in (first, second):
            if proc and proc.poll() is None:
                proc.kill()
                proc.wait(10)
        sink.close()
        tracing.shutdown()

    client_spans = [s for s in memory.get_finished_spans()]
    worker_spans = receiver.received()
    receiver.close()
    assert receiver.requests > 0
    start = [s for s in client_spans if s.name == "StartWorkflow:longrun.AgentRun"]
    assert len(start) == 1 and start[0].context is not None
    trace_id = format(start[0].context.trace_id, "032x")

    ours = [s for s in worker_spans if s.attributes.get("temporalWorkflowID") == run_id
            or s.attributes.get("longrun.run_id") == run_id]
    assert ours, "the workers' spans arrived at the receiver"
    assert {s.trace_id for s in ours} == {trace_id}, "every span of the run is in the start's trace"
    assert {s.trace_id for s in worker_spans if s.trace_id != trace_id} == set(), "no span of another trace"

    names = [s.name for s in worker_spans]
    assert "RunWorkflow:longrun.AgentRun" in names
    assert names.count("chat scripted") >= 3
    tools = [s for s in worker_spans if s.name == "execute_tool send_message"]
    retried = [s for s in tools if s.attributes.get("longrun.activity.attempt", 1) > 1]
    assert retried, f"the retried tool call has its span on the second worker: {[t.attributes for t in tools]}"
    assert retried[0].attributes["longrun.effect.status"] == "confirmed"
    assert retried[0].attributes["longrun.tool.kind"] == "effect"
    assert {s.service for s in retried} == {"longrun-worker"}
    second_tool = [s for s in tools if s.attributes.get("longrun.gate.verdict") == "allow"]
    assert second_tool and len(second_tool[0].attributes["longrun.action_hash"]) == 64

    # the parents line up: each worker span hangs under a span of the trace, up to the start;
    # only the children of the killed attempt (never ended, never exported) are missing
    known = {s.span_id for s in worker_spans} | {format(s.context.span_id, "016x") for s in client_spans if s.context}
    orphans = [s for s in ours if s.parent_id and s.parent_id not in known]
    assert all(s.attributes.get("longrun.activity.attempt", 1) == 1 for s in orphans), orphans
    # every activity of the run, the retry on the second worker included, hangs under the start's
    # span, as the workflow's own header says (no `StartActivity` span in between: see
    # longrun.telemetry.interceptor)
    start_id = format(start[0].context.span_id, "016x")
    activities = [s for s in ours if s.name.startswith("RunActivity:")]
    assert {s.parent_id for s in activities} == {start_id}, [(s.name, s.parent_id) for s in activities]
    assert len([s for s in activities if s.name == "RunActivity:longrun.tool_step"]) >= 3
    assert not [s for s in worker_spans if s.name.startswith("StartActivity:")]
    [workflow] = [s for s in ours if s.name == "RunWorkflow:longrun.AgentRun"]
    assert workflow.parent_id == start_id

    chat = next(s for s in worker_spans if s.name == "chat scripted")
    assert chat.attributes["gen_ai.operation.name"] == "chat"
    assert chat.attributes["gen_ai.request.model"] == "scripted"
    assert chat.attributes["gen_ai.usage.input_tokens"] > 0
    assert chat.attributes["gen_ai.response.finish_reasons"] == ["tool_use"]

    everything = [str(v) for s in worker_spans for v in [s.name, s.status_message, *strings(s.attributes),
                                                          *strings(s.events)]]
    everything += [str(v) for s in client_spans for v in [s.name, *strings(dict(s.attributes or {}))]]
    for secret in SECRETS:
        assert not [v for v in everything if secret in v], f"{secret[:20]}... is in a span"
    assert not [s for s in worker_spans if "gen_ai.input.messages" in s.attributes], "no content without the opt-in"
    (tmp_path / "trace.txt").write_text(tree(worker_spans))
    print(tree(worker_spans))
