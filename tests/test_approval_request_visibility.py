"""A pending approval is shown, and can be answered, only once its request is in the audit.

The workflow used to set the pending approval and then write its `approval_requested` record; a
client that polled `pending()` in between (a loaded CI run did) got an id that `approval()` could
not find. Here a trigger on the test's database holds that one insert on an advisory lock the test
owns, so the window stays open for as long as the test looks: the real worker, the real Temporal
dev server and the real client, with the audit write paused where it happens."""

from __future__ import annotations

import os
from pathlib import Path

import psycopg
import pytest

import longrun
from tests.support.harness import running_worker, until
from tests.support.policy import GREETING_EDIT_PLAN, PlanProvider, greeting_workspace

pytestmark = pytest.mark.slow

LOCK = 424242
HOLD_THE_REQUEST = f"""
CREATE FUNCTION test_hold_approval_request() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.kind = 'approval_requested' THEN PERFORM pg_advisory_xact_lock({LOCK}); END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER test_hold_approval_request BEFORE INSERT ON audit_events
    FOR EACH ROW EXECUTE FUNCTION test_hold_approval_request();
"""


async def _waiting(holder: psycopg.AsyncConnection, where: str, *params: object) -> bool:
    """Whether some session waits for a lock matching `where` (pg_locks)."""
    cur = await holder.execute(f"SELECT count(*) FROM pg_locks WHERE NOT granted AND {where}", params)
    row = await cur.fetchone()
    return bool(row and row[0])


@pytest.mark.timeout(300)
async def test_the_request_shows_only_once_it_is_audited(store, db_url, temporal_env, temporal_client, tmp_path):
    ws = greeting_workspace(tmp_path)
    key_file = Path(os.environ["LONGRUN_KEYS_DIR"]) / "alice.pem"
    holder = await psycopg.AsyncConnection.connect(db_url, autocommit=True)
    try:
        await holder.execute(HOLD_THE_REQUEST)
        await holder.execute("SELECT pg_advisory_lock(%s)", (LOCK,))
        async with running_worker(temporal_client, store, provider=PlanProvider(plan=GREETING_EDIT_PLAN)) as h:
            target = temporal_env.client.service_client.config.target_host
            async with await longrun.Client.connect(target=target, namespace="default", database_url=db_url,
                                                    task_queue=h.task_queue) as client:
                try:
                    run_id = await client.start(longrun.RunSpec(objective="Fix the greeting.", workspace=str(ws),
                                                                approvers=["alice"]))

                    await until("the approval request's audit write to wait on the lock",
                                 lambda: _waiting(holder, "locktype = 'advisory' AND objid = %s", LOCK), timeout=120)
                    verdicts = [r.event for r in await client.audit(run_id) if r.kind == "gate_verdict"]
                    approval_id = "apr-" + verdicts[-1].action_hash[:16]  # what the run will ask for

                    status = await client.status(run_id)
                    assert status.pending_approval is None and status.status != "waiting_approval"
                    assert await client.pending(run_id) is None
                    await holder.execute("SELECT pg_advisory_unlock(%s)", (LOCK,))
                    pending = await until("the approval", lambda: client.pending(run_id), timeout=120)
                    assert pending.approval_id == approval_id
                    view = await client.approval(run_id, pending.approval_id)  # the request is in the audit
                    assert view.decision == "pending" and view.hash_matches
                    assert "approved" in (await client.approve(run_id, approval_id, "alice", key_file=key_file)).lower()
                    kinds = [r.kind async for r in client.events(run_id)]  # follows until the run ends
                    assert kinds[-1] == "run_finished"
                    assert kinds.count("approval_granted") == 1
                    assert kinds.index("approval_requested") < kinds.index("approval_granted")
                finally:  # a failure above must not leave the worker's audit write waiting forever
                    await holder.execute("SELECT pg_advisory_unlock_all()")
    finally:
        await holder.close()
