"""A grant that fails does not hang the run: the request stays answerable (approve again,
reject, or cancel), the failure is audited, and cancel escapes every wait, even one for an
answer that is still being written when the request expires.

Faults are injected into the grant's own store call (the worker's `reapply_on_head` for the
approver) through `tests.support.faults.FaultyStore`: the real store, refusing that one write."""

from __future__ import annotations

import asyncio

import pytest

from longrun.client import calls as client_calls
from longrun.client import decide
from longrun.errors import ApprovalError, StoreError, StoreUnavailable
from longrun.models.spec import RunSpec
from tests.support.faults import FaultyStore, raising
from tests.support.harness import running_worker
from tests.support.policy import PlanProvider

pytestmark = pytest.mark.slow

EDIT_PLAN = [
    [("set_next_action", {"next_action": "edit"})],
    [("apply_patch", {"path": "hello.txt", "old": "helo", "new": "hello"})],
    [("set_next_action", {"next_action": "stop"})],
]


def spec(tmp_path, **extra) -> RunSpec:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "hello.txt").write_text("helo world\n")
    return RunSpec(objective="Fix the greeting.", workspace=str(ws), approvers=["alice"], **extra)


def is_grant(run_id, mutate, actor, reason, **_) -> bool:
    return actor.startswith("human:") and reason.startswith("approval ")


@pytest.mark.parametrize("then", ["approve", "reject", "cancel"])
async def test_a_failed_grant_leaves_the_request_answerable(store, temporal_client, tmp_path, then):
    faulty = FaultyStore(store)
    faulty.inject("reapply_on_head", raising(StoreError("injected: the database refused the write")), when=is_grant)
    async with running_worker(temporal_client, faulty, provider=PlanProvider(plan=EDIT_PLAN)) as h:
        run_id = await h.start(spec(tmp_path))
        pending = (await h.wait_for(run_id, lambda s: s.status == "waiting_approval")).pending_approval

        with pytest.raises(ApprovalError, match="could not be recorded .*injected.*still open: try again"):
            await decide.approve(h.client, run_id, pending.approval_id, "alice")
        assert faulty.fired["reapply_on_head"] == 1, "the grant's write was refused once, and not retried"
        after = await h.status(run_id)
        assert after.status == "waiting_approval" and after.pending_approval.approval_id == pending.approval_id
        assert store.all_approvals(run_id) == [], "nothing was granted"
        failed = [r.event for r in store.audit(run_id) if r.kind == "approval_failed"]
        assert len(failed) == 1 and failed[0].approver == "alice" and "injected" in failed[0].reason

        if then == "approve":
            await decide.approve(h.client, run_id, pending.approval_id, "alice")
        elif then == "reject":
            await decide.reject(h.client, run_id, pending.approval_id, "alice", "not now")
        else:
            await client_calls.control(h.client, run_id, "cancel")
        result = await h.result(run_id)

    patched = (tmp_path / "ws" / "hello.txt").read_text() == "hello world\n"
    assert (result.status, patched) == {
        "approve": ("completed", True), "reject": ("completed", False), "cancel": ("cancelled", False),
    }[then]
    assert store.verify_chain(run_id).ok


async def test_cancel_escapes_a_grant_still_being_written_when_the_request_expires(store, temporal_client, tmp_path):
    # the grant's write keeps failing as if the database were down: its retries outlast the
    # request's 3 s lifetime, and the run waits for the answer being written; cancel ends it
    faulty = FaultyStore(store)
    faulty.inject("reapply_on_head", raising(StoreUnavailable("injected: the database restarts")), times=100, when=is_grant)
    async with running_worker(temporal_client, faulty, provider=PlanProvider(plan=EDIT_PLAN)) as h:
        run_id = await h.start(spec(tmp_path, approval_ttl_seconds=3))
        pending = (await h.wait_for(run_id, lambda s: s.status == "waiting_approval")).pending_approval
        answer = asyncio.ensure_future(decide.approve(h.client, run_id, pending.approval_id, "alice"))
        await asyncio.sleep(4)  # past the request's expiry, the grant still retrying
        assert not answer.done() and faulty.fired["reapply_on_head"] >= 2
        await client_calls.control(h.client, run_id, "cancel")
        result = await h.result(run_id, timeout=20)
        with pytest.raises(ApprovalError):
            await answer

    assert result.status == "cancelled"
    assert store.all_approvals(run_id) == []
    assert (tmp_path / "ws" / "hello.txt").read_text() == "helo world\n"
