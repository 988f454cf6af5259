"""With lowered history limits on the dev server, a long run completes through continue-as-new,
while a control loop that ignores the suggestion is terminated at the limit."""

from __future__ import annotations

import uuid

import pytest
from temporalio.client import WorkflowExecutionStatus, WorkflowFailureError
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from longrun.models.spec import RunSpec
from tests.fixtures.temporal import temporal_binary
from tests.support.control_workflow import LoopWithoutContinueAsNew, noop
from tests.support.harness import running_worker
from tests.support.policy import PlanProvider

pytestmark = pytest.mark.slow

LIMITS = [
    "--dynamic-config-value", "limit.historyCount.suggestContinueAsNew=60",
    "--dynamic-config-value", "limit.historyCount.error=200",
]
TURNS = 30


@pytest.fixture(scope="module")
async def limited_env():
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=temporal_binary(), dev_server_extra_args=LIMITS,
        data_converter=pydantic_data_converter, dev_server_log_level="error",
    )
    try:
        yield env
    finally:
        await env.shutdown()


async def test_long_run_completes_through_continue_as_new(store, limited_env, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("a\n")
    provider = PlanProvider(plan=[[("read_file", {"path": "a.txt"})]] * TURNS)
    async with running_worker(limited_env.client, store, provider=provider) as h:
        spec = RunSpec(objective="read it many times", workspace=str(ws), continue_as_new_every=1000)
        run_id = await h.start(spec)
        result = await h.result(run_id, timeout=180)
    assert result.status == "completed" and result.turns == TURNS + 1
    lengths = []
    async for wf in limited_env.client.list_workflows(f"WorkflowId = '{run_id}'"):
        generation = limited_env.client.get_workflow_handle(run_id, run_id=wf.run_id)
        lengths.append(len([e async for e in generation.fetch_history_events()]))
    assert len(lengths) >= 3, f"expected several continue-as-new generations, saw {len(lengths)}"
    assert max(lengths) < 200, f"every generation stays under the history limit, got {lengths}"
    assert store.verify_chain(run_id).ok
    assert len([e for e in store.transcript(run_id) if e.role == "assistant"]) == TURNS + 1


async def test_control_loop_without_continue_as_new_is_terminated(limited_env):
    queue = f"control-{uuid.uuid4().hex[:8]}"
    async with Worker(limited_env.client, task_queue=queue, workflows=[LoopWithoutContinueAsNew], activities=[noop]):
        handle = await limited_env.client.start_workflow(
            LoopWithoutContinueAsNew.run, TURNS, id=f"control-{uuid.uuid4().hex[:8]}", task_queue=queue
        )
        with pytest.raises(WorkflowFailureError):
            await handle.result()
    desc = await handle.describe()
    assert desc.status == WorkflowExecutionStatus.TERMINATED
