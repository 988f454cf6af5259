"""The task state holds what is open (issue 26): settled effects, used approvals and ended scopes
move to the append-only, hash-chained `closed_items` table in the write that closes them, the
gate still finds them there, and a refactor of hundreds of edits keeps the state row small.
Rules: `longrun.store.closing`."""

from __future__ import annotations

import json

import psycopg
import pytest

from longrun.activities import AgentActivities
from longrun.activities.base import Deps
from longrun.cli.commands.audit import audit_run
from longrun.client import decide
from longrun.errors import StoreError
from longrun.models import RunSpec
from longrun.models.io import GateInput, RunToolInput, ToolCallRef
from longrun.models.state import Effect, EffectStatus, NextAction, utcnow
from longrun.store import Store
from longrun.tools import default_registry
from tests.support.harness import running_worker
from tests.support.policy import GREETING_EDIT_PLAN, PlanProvider, greeting_workspace

EDITS = 300
PER_TURN = 10


def _state_bytes(db_url: str, run_id: str) -> int:
    with psycopg.connect(db_url) as c:
        row = c.execute("SELECT state::text FROM task_states WHERE run_id = %s", (run_id,)).fetchone()
    assert row is not None
    return len(row[0].encode())


def _settle_one(store: Store, run_id: str, n: int) -> None:
    action = f"{run_id}/t{n}/c0"
    effect = Effect(action_id=action, tool="write_file", status=EffectStatus.unknown, idempotency_key=action)
    store.reapply_on_head(run_id, lambda s: s.model_copy(update={"effects": [*s.effects, effect]}), "ledger", "intent")
    store.reapply_on_head(run_id, lambda s: s.model_copy(update={"effects": [
        e.model_copy(update={"status": EffectStatus.confirmed, "external_id": action}) if e.action_id == action else e
        for e in s.effects]}), "ledger", "settle")


def test_settled_effects_leave_the_state_in_the_write_that_settles_them(store: Store, tmp_path) -> None:
    run_id = "closed-store"
    store.create_run(run_id, RunSpec(objective="o", workspace=str(tmp_path)))
    for n in range(1, 51):
        _settle_one(store, run_id, n)
    state = store.load_state(run_id)
    assert state.effects == [] and state.closed.effects_confirmed == 50 and state.closed.count == 50
    closed = store.closed_items(run_id, "effect")
    assert [r.item_id for r in closed] == [f"{run_id}/t{n}/c0" for n in range(1, 51)]
    history = store.state_history(run_id)
    # each item left in the version that settled it, and that version no longer holds it
    assert all(history[r.state_version - 1].state.effect(r.item_id) is None for r in closed)
    assert all(history[r.state_version - 2].state.effect(r.item_id) is not None for r in closed)
    assert store.verify_chain(run_id).ok
    assert store.all_effects(run_id)[0].action_id == f"{run_id}/t1/c0"


def test_a_tampered_closed_item_fails_verify(store: Store, db_url: str, tmp_path) -> None:
    run_id = "closed-tamper"
    store.create_run(run_id, RunSpec(objective="o", workspace=str(tmp_path)))
    for n in range(1, 4):
        _settle_one(store, run_id, n)
    with psycopg.connect(db_url, autocommit=True) as c:  # the owner, with the trigger off
        c.execute("ALTER TABLE closed_items DISABLE TRIGGER closed_items_append_only")
        try:
            c.execute("UPDATE closed_items SET item = %s::json WHERE run_id = %s AND seq = 2",
                      (json.dumps({"forged": True}), run_id))
        finally:
            c.execute("ALTER TABLE closed_items ENABLE TRIGGER closed_items_append_only")
    verdict = store.verify_chain(run_id)
    assert not verdict.ok and verdict.table == "closed_items" and verdict.row == 2, verdict


def test_a_failed_move_writes_no_state_either(store: Store, db_url: str, tmp_path) -> None:
    """Closing and moving are one statement: when the move cannot be written (here a row already
    holds the number the next closed item takes), the state keeps the item, at the same version,
    and nothing is lost; the next write moves it."""
    run_id = "closed-atomic"
    store.create_run(run_id, RunSpec(objective="o", workspace=str(tmp_path)))
    _settle_one(store, run_id, 1)
    action = f"{run_id}/t2/c0"
    effect = Effect(action_id=action, tool="write_file", status=EffectStatus.unknown, idempotency_key=action)
    store.reapply_on_head(run_id, lambda s: s.model_copy(update={"effects": [effect]}), "ledger", "intent")
    with psycopg.connect(db_url, autocommit=True) as c:
        c.execute("INSERT INTO closed_items (run_id, seq, kind, item_id, item, state_version, prev_hash, hash) "
                  "VALUES (%s, 2, 'effect', 'squatter', '{}'::json, 1, %s, %s)", (run_id, "0" * 64, "0" * 64))
    before = store.load_state(run_id)
    settled = before.model_copy(update={"effects": [effect.model_copy(update={
        "status": EffectStatus.confirmed, "external_id": "x"})]})
    with pytest.raises(StoreError):
        store.compare_and_set(run_id, before.state_version, settled, "ledger", "settle")
    after = store.load_state(run_id)
    assert after.state_version == before.state_version and after.effect(action) is not None
    assert after.effects[0].status is EffectStatus.unknown
    assert [r.item_id for r in store.closed_items(run_id)] == [f"{run_id}/t1/c0", "squatter"]


@pytest.mark.slow
async def test_a_duplicate_effect_is_refused_from_the_table(store: Store, temporal_client, tmp_path) -> None:
    """After the run, its edit and the approval it used live only in `closed_items`: running the
    same call again runs nothing, and the gate says its approval was used."""
    ws = greeting_workspace(tmp_path)
    async with running_worker(temporal_client, store, provider=PlanProvider(plan=GREETING_EDIT_PLAN)) as h:
        run_id = await h.start(RunSpec(objective="Fix the greeting.", workspace=str(ws), approvers=["alice"]))
        pending = (await h.wait_for(run_id, lambda s: s.status == "waiting_approval")).pending_approval
        await decide.approve(h.client, run_id, pending.approval_id, "alice", store=store)
        assert (await h.result(run_id)).status == "completed"
    state = store.load_state(run_id)
    assert state.effects == [] and state.approvals == [], "settled and used: not in the state"
    assert state.closed.effects_confirmed == 1 and state.closed.approvals_used == 1
    [effect] = store.all_effects(run_id)
    assert effect.status is EffectStatus.confirmed
    (ws / "hello.txt").write_text("helo world\n")  # if the edit ran again, it would apply again

    entries = store.transcript(run_id)
    seq = next(e.seq for e in entries if any(b.name == "apply_patch" for b in e.message.tool_uses()))
    call = ToolCallRef(call_id="toolu_p002_0", name="apply_patch", index=0, seq=seq)
    acts = AgentActivities(Deps(store=store, registry=default_registry(), provider_for=lambda _m: PlanProvider(plan=[])))
    ran = acts.run_tool(RunToolInput(run_id=run_id, turn=2, call=call, action_id=effect.action_id,
                                     expected_version=state.state_version, now=utcnow()))
    assert ran.result.artifact_sha256 is not None
    assert "already confirmed" in store.get_artifact(ran.result.artifact_sha256).decode()
    assert (ws / "hello.txt").read_text() == "helo world\n", "the edit was not applied a second time"
    head = store.reapply_on_head(run_id, lambda s: s.model_copy(update={"next_action": NextAction.edit}), "test", "edit")
    gate = acts.gate(GateInput(run_id=run_id, turn=2, call=call, expected_version=head.state_version,
                               proposed_version=pending.state_version, now=utcnow()))
    assert gate.verdict == "deny" and "already used" in gate.reason, gate
    assert store.verify_chain(run_id).ok


@pytest.mark.slow
@pytest.mark.timeout(600)
async def test_a_refactor_of_300_scoped_edits_keeps_the_state_small(store: Store, db_url: str, temporal_client,
                                                                    tmp_path) -> None:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    for n in range(EDITS):
        (ws / "src" / f"m{n:03d}.py").write_text(f"value = old_name_{n}\n")
    edits = [("apply_patch", {"path": f"src/m{n:03d}.py", "old": f"old_name_{n}", "new": f"new_name_{n}"})
             for n in range(EDITS)]
    plan = [[("set_next_action", {"next_action": "edit"})], edits[:1],
            *(edits[i:i + PER_TURN] for i in range(1, EDITS, PER_TURN)), [("set_next_action", {"next_action": "stop"})]]
    async with running_worker(temporal_client, store, provider=PlanProvider(plan=plan)) as h:
        run_id = await h.start(RunSpec(objective="Rename old_name to new_name.", workspace=str(ws), approvers=["alice"]))
        first = (await h.wait_for(run_id, lambda s: s.status == "waiting_approval")).pending_approval
        await decide.grant_scope(h.client, store, run_id, "alice", tools=["apply_patch"], paths=["src/**"],
                                 max_uses=EDITS - 1, ttl_seconds=3600)
        await decide.approve(h.client, run_id, first.approval_id, "alice", store=store)
        result = await h.result(run_id, timeout=540)
        assert result.status == "completed", result.reason

    assert all("new_name" in p.read_text() for p in (ws / "src").iterdir())
    assert _state_bytes(db_url, run_id) < 8_000
    state = store.load_state(run_id)
    assert state.effects == [] and state.scopes == [] and state.approvals == []
    effects = store.closed_items(run_id, "effect")
    assert len([r for r in effects if r.item["tool"] == "apply_patch"]) == EDITS
    assert len(store.closed_items(run_id, "scope")) == 1, "the scope closed when it was used up"
    report = audit_run(store, run_id, verify=True)
    assert report.verdict is not None and report.verdict.ok, report.verdict
    assert report.decisions is not None and report.decisions.ok
    assert report.summary["effects"] == {"confirmed": EDITS}
