"""An approval request that nobody answers expires: it is never used, approving it afterwards is
refused, and the run returns to ask_human. Time is skipped on the real dev server
(time-skipping v2), so two hours pass in about a second."""

from __future__ import annotations

from datetime import timedelta

import pytest
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import TimeSkippingConfig, WorkflowEnvironment

from longrun.client import calls as client_calls
from longrun.client import decide
from longrun.errors import ApprovalError
from longrun.models.spec import RunSpec
from tests.fixtures.temporal import temporal_binary
from tests.support.harness import running_worker
from tests.support.policy import PlanProvider

pytestmark = pytest.mark.slow


async def test_expired_approval_is_never_used_and_the_run_asks_a_human(store, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "hello.txt").write_text("helo world\n")
    plan = [
        [("set_next_action", {"next_action": "edit"})],
        [("apply_patch", {"path": "hello.txt", "old": "helo", "new": "hello"})],
        [("set_next_action", {"next_action": "stop"})],
    ]
    env = await WorkflowEnvironment.start_time_skipping_v2(
        ts_config=TimeSkippingConfig(enabled=False),
        dev_server_existing_path=temporal_binary(),
        dev_server_extra_args=["--dynamic-config-value", "frontend.WorkflowTimeSkippingEnabled=true"],
        data_converter=pydantic_data_converter,
    )
    try:
        async with running_worker(env.client, store, provider=PlanProvider(plan=plan)) as h:
            spec = RunSpec(objective="Fix the greeting.", workspace=str(ws), approvers=["alice"], approval_ttl_seconds=3600)
            run_id = await h.start(spec)
            pending = (await h.wait_for(run_id, lambda s: s.status == "waiting_approval")).pending_approval
            await env.fast_forward(env.client.get_workflow_handle(run_id), timedelta(hours=2))
            asking = await h.wait_for(
                run_id, lambda s: s.state.next_action == "ask_human", what="the run to ask a human"
            )
            assert asking.pending_approval is None and asking.status == "paused"
            assert "expired" in asking.reason
            with pytest.raises(ApprovalError, match="no pending approval|expired"):
                await decide.approve(h.client, run_id, pending.approval_id, "alice")
            state = store.load_state(run_id)
            assert state.approvals == [] and state.effects == []
            assert (ws / "hello.txt").read_text() == "helo world\n"
            kinds = [r.kind for r in store.audit(run_id)]
            assert "approval_expired" in kinds and "effect_intent" not in kinds
            await client_calls.control(h.client, run_id, "cancel")
            result = await h.result(run_id)
            assert result.status == "cancelled"
    finally:
        await env.shutdown()
