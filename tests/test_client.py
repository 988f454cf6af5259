"""`longrun.Client` on the real stack, through the public names only: start a run, wait for its
approval, look at it whole, approve it with a key file, read its events, status, usage and
verification, then steer and cancel another run. Only the worker comes from the test harness
(a worker is not part of the client)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import longrun
from tests.support.harness import running_worker, until
from tests.support.policy import GREETING_EDIT_PLAN, PlanProvider, greeting_workspace

pytestmark = pytest.mark.slow


async def _connect(temporal_env, db_url: str, task_queue: str) -> longrun.Client:
    target = temporal_env.client.service_client.config.target_host
    return await longrun.Client.connect(target=target, namespace="default", database_url=db_url,
                                        task_queue=task_queue)


@pytest.mark.timeout(300)
async def test_start_wait_approve_with_a_key_file_and_read_the_record(store, db_url, temporal_env, temporal_client,
                                                                     tmp_path):
    ws = greeting_workspace(tmp_path)
    key_file = Path(os.environ["LONGRUN_KEYS_DIR"]) / "alice.pem"
    async with running_worker(temporal_client, store, provider=PlanProvider(plan=GREETING_EDIT_PLAN)) as h:
        async with await _connect(temporal_env, db_url, h.task_queue) as client:
            run_id = await client.start(longrun.RunSpec(objective="Fix the greeting.", workspace=str(ws),
                                                        approvers=["alice"]))
            pending = await until("the approval", lambda: client.pending(run_id))
            assert isinstance(pending, longrun.PendingApproval)
            view = await client.approval(run_id, pending.approval_id)
            assert view.tool == pending.tool and view.hash_matches and view.decision == "pending"

            answer = await client.approve(run_id, pending.approval_id, "alice", key_file=key_file)
            assert "approved" in answer.lower()

            kinds = [r.kind async for r in client.events(run_id)]  # follows until the run ends
            assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
            assert "approval_requested" in kinds and "approval_granted" in kinds
            assert [r.kind for r in await client.audit(run_id)] == kinds
            later = [r.seq async for r in client.events(run_id, after=3, follow=False)]
            assert later and min(later) == 4

            status = await client.status(run_id)
            assert status.status == longrun.RunStatus.completed and status.pending_approval is None
            assert run_id in [r.run_id for r in await client.list()]
            usage = await client.usage(run_id)
            assert usage.model_calls == status.model_calls >= 1
            verified = await client.verify(run_id)
            assert verified.ok, str(verified.decisions)
            assert verified.decisions.checked >= 1


@pytest.mark.timeout(300)
async def test_say_pause_resume_cancel_and_a_finished_run_refuses(store, db_url, temporal_env, temporal_client,
                                                                   tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("a\n")
    provider = PlanProvider(plan=[[("read_file", {"path": "a.txt"})]] * 400)
    async with running_worker(temporal_client, store, provider=provider) as h:
        async with await _connect(temporal_env, db_url, h.task_queue) as client:
            run_id = await client.start(longrun.RunSpec(objective="read a lot", workspace=str(ws)))
            await until("two turns", lambda: _turns_at_least(client, run_id, 2))
            assert "paused" in await client.pause(run_id)
            await client.say(run_id, "Keep to a.txt.", constraint=True)
            # a paused run applies a say at once; wait for it, or a cancel delivered in the same
            # workflow task ends the run before the say is applied (it stays in the inbox, unaudited)
            await until("the say applied", lambda: _audited(client, run_id, "steered"))
            await client.resume(run_id)
            await client.cancel(run_id)
            kinds = [r.kind async for r in client.events(run_id)]
            assert kinds[-1] == "run_finished" and kinds.count("run_control") == 3 and "steered" in kinds
            assert (await client.status(run_id)).status == longrun.RunStatus.cancelled
            with pytest.raises(longrun.ApprovalError, match="already finished"):
                await client.pause(run_id)


async def _turns_at_least(client: longrun.Client, run_id: str, n: int) -> bool:
    return (await client.status(run_id)).turn >= n


async def _audited(client: longrun.Client, run_id: str, kind: str) -> bool:
    return any(r.kind == kind for r in await client.audit(run_id))


@pytest.mark.timeout(60)
def test_the_sync_client_reads_and_refuses_like_the_async_one(store, db_url, temporal_env):
    target = temporal_env.client.service_client.config.target_host
    with longrun.SyncClient(target=target, namespace="default", database_url=db_url) as client:
        assert client.list() == []
        with pytest.raises(longrun.RunNotFoundError, match="unknown run id 'run-nobody'"):
            client.status("run-nobody")
