"""Approvals you can prove: a decision counts only when it is signed with a key registered for an
approver of the run, is fresh, and is about exactly the pending action. Everything else is refused,
audited as `approval_refused`, and leaves the request open. What was accepted verifies again from
Postgres alone.

These go through the real client (`decide.approve`), the real workflow validators and the real grant
activity on an in-process worker; the CLI versions are in tests/test_cli_approvals.py and tests/test_cli_keys.py."""

from __future__ import annotations

import base64
import time
from datetime import UTC, datetime, timedelta

import pytest

from longrun.auth import Signer
from longrun.auth.audit_check import verify_decisions
from longrun.client import decide
from longrun.errors import ApprovalError
from longrun.models.audit import ApprovalGranted, ApprovalRefused
from longrun.models.io import ApproveInput
from longrun.models.signed import DecisionRecord, Proof
from longrun.models.spec import RunSpec
from tests.support import principals
from tests.support.harness import running_worker
from tests.support.policy import GREETING_EDIT_PLAN, PlanProvider, greeting_workspace

pytestmark = pytest.mark.slow

EDIT_PLAN = GREETING_EDIT_PLAN
workspace = greeting_workspace


def signer(name: str) -> Signer:
    return Signer.load(name)


def record(run_id: str, approval_id: str, action_hash: str, who: Signer, **changes) -> DecisionRecord:
    fields = dict(run_id=run_id, principal=who.principal, key_id=who.key_id, issued_at=int(time.time()),
                  approval_id=approval_id, action_hash=action_hash, decision="approve")
    return DecisionRecord(**{**fields, **changes})


def refusals(store, run_id: str) -> list[str]:
    return [r.event.reason for r in store.audit(run_id) if isinstance(r.event, ApprovalRefused)]


async def test_unsigned_forged_stale_and_misbound_proofs_are_refused_and_a_valid_one_counts_once(
    store, temporal_client, tmp_path
):
    ws = workspace(tmp_path)
    alice, mallory = signer("alice"), signer("mallory")
    async with running_worker(temporal_client, store, provider=PlanProvider(plan=EDIT_PLAN)) as h:
        run_id = await h.start(RunSpec(objective="Fix the greeting.", workspace=str(ws), approvers=["alice"]))
        pending = (await h.wait_for(run_id, lambda s: s.status == "waiting_approval")).pending_approval
        aid, ahash = pending.approval_id, pending.action_hash

        async def send(proof: Proof | None) -> str:
            return await decide._send(h.client, store, run_id, aid, "alice", "approve",
                                      ApproveInput(approval_id=aid, approver="alice", proof=proof))

        with pytest.raises(ApprovalError, match="no signed proof: `--as NAME` alone approves nothing"):
            await send(None)
        # mallory's key, claiming to be alice
        impostor = Signer(principal="alice", key=mallory.key)
        with pytest.raises(ApprovalError, match="belongs to 'mallory', not to 'alice'"):
            await send(impostor.sign(record(run_id, aid, ahash, impostor)))
        # alice's key id, mallory's signature
        forged = record(run_id, aid, ahash, alice)
        signature = base64.b64encode(mallory.key.sign(forged.canonical().encode())).decode()
        with pytest.raises(ApprovalError, match="signature does not verify against key"):
            await send(Proof(payload=forged.canonical(), signature=signature, key_id=alice.key_id))
        # alice's own signature over a record altered afterwards
        genuine = alice.sign(record(run_id, aid, ahash, alice))
        altered = genuine.payload.replace('"decision":"approve"', '"decision":"approve","reason":"x"')
        with pytest.raises(ApprovalError, match="signature does not verify|not in canonical form"):
            await send(Proof(payload=altered, signature=genuine.signature, key_id=alice.key_id))
        with pytest.raises(ApprovalError, match="the record is stale"):
            await send(alice.sign(record(run_id, aid, ahash, alice, issued_at=int(time.time()) - 3600, lifetime_seconds=60)))
        with pytest.raises(ApprovalError, match="a signature covers one exact action"):
            await send(alice.sign(record(run_id, aid, "ab" * 32, alice)))
        with pytest.raises(ApprovalError, match="is for run-elsewhere"):
            await send(alice.sign(record("run-elsewhere", aid, ahash, alice)))

        assert (await h.status(run_id)).status == "waiting_approval", "every refusal leaves the request open"
        assert store.all_approvals(run_id) == []
        assert len(refusals(store, run_id)) == 7, "every refusal is audited"

        valid = alice.sign(record(run_id, aid, ahash, alice))
        assert (await send(valid)).startswith(f"approved {aid}")
        with pytest.raises(ApprovalError, match="already decided|no pending approval"):
            await send(valid)  # the same proof, replayed
        result = await h.result(run_id)

    assert result.status == "completed"
    assert (ws / "hello.txt").read_text() == "hello world\n"
    [granted] = [r.event for r in store.audit(run_id) if isinstance(r.event, ApprovalGranted)]
    assert granted.proof == valid and granted.approver == "alice"
    [approval] = store.all_approvals(run_id)
    assert approval.key_id == alice.key_id and approval.used
    report = verify_decisions(store, run_id)
    assert report.ok and report.checked == 1, report


async def test_revoked_and_expired_keys_sign_nothing(store, temporal_client, tmp_path):
    ws = workspace(tmp_path)
    keys = tmp_path / "keys"
    carol = principals.register(store, keys, "carol")
    dave = principals.register(store, keys, "dave")
    async with running_worker(temporal_client, store, provider=PlanProvider(plan=EDIT_PLAN)) as h:
        run_id = await h.start(RunSpec(objective="Fix the greeting.", workspace=str(ws), approvers=["carol", "dave"]))
        pending = (await h.wait_for(run_id, lambda s: s.status == "waiting_approval")).pending_approval

        assert store.revoke_credentials("carol", reason="laptop lost") == [carol.key_id]
        with pytest.raises(ApprovalError, match=r"was revoked at .* \(laptop lost\)"):
            await decide.approve(h.client, run_id, pending.approval_id, carol, store=store)
        with store.transaction("expire dave's key") as s:  # as if its expiry had passed (the owner may not do this)
            from sqlalchemy import text

            s.execute(text("ALTER TABLE credentials DISABLE TRIGGER credentials_revoke_only"))
            s.execute(text("UPDATE credentials SET expires_at = now() - interval '1 second' WHERE principal = 'dave'"))
            s.execute(text("ALTER TABLE credentials ENABLE TRIGGER credentials_revoke_only"))
        with pytest.raises(ApprovalError, match="expired at"):
            await decide.approve(h.client, run_id, pending.approval_id, dave, store=store)
        assert (await h.status(run_id)).status == "waiting_approval"

        fresh = principals.register(store, keys, "carol", key_file=keys / "carol-2.pem")
        await decide.approve(h.client, run_id, pending.approval_id, fresh, store=store)
        assert (await h.result(run_id)).status == "completed"
    assert [r for r in refusals(store, run_id) if "revoked" in r] and [r for r in refusals(store, run_id) if "expired" in r]
    assert store.all_approvals(run_id)[0].key_id == fresh.key_id


async def test_start_refuses_an_approver_who_is_not_a_principal(store, temporal_client, tmp_path):
    ws = workspace(tmp_path)
    async with running_worker(temporal_client, store, provider=PlanProvider(plan=EDIT_PLAN)) as h:
        with pytest.raises(Exception, match=r"'ceo' is not a principal: `longrun approvers add ceo`"):
            await h.start(RunSpec(objective="o", workspace=str(ws), approvers=["alice", "ceo"]))
    assert store.list_runs(limit=10) == []


async def test_edit_then_approve_runs_the_edited_call_and_tells_the_model(store, temporal_client, tmp_path):
    ws = workspace(tmp_path)
    provider = PlanProvider(plan=EDIT_PLAN)
    async with running_worker(temporal_client, store, provider=provider) as h:
        run_id = await h.start(RunSpec(objective="Fix the greeting.", workspace=str(ws), approvers=["alice"]))
        pending = (await h.wait_for(run_id, lambda s: s.status == "waiting_approval")).pending_approval
        with pytest.raises(ApprovalError, match="changes nothing"):
            await decide.approve(h.client, run_id, pending.approval_id, "alice", store=store, edit={"new": "hello"})
        answer = await decide.approve(h.client, run_id, pending.approval_id, "alice", store=store,
                                   edit={"new": "Hello"})
        assert "with the arguments as you edited them" in answer
        assert (await h.result(run_id)).status == "completed"

    assert (ws / "hello.txt").read_text() == "Hello world\n", "the edited call ran, not the proposed one"
    [granted] = [r.event for r in store.audit(run_id) if isinstance(r.event, ApprovalGranted)]
    assert granted.original_action_hash == pending.action_hash and granted.action_hash != pending.action_hash
    told = " ".join(str(m.model_dump()) for m in provider.requests[-1].messages)
    assert "alice edited this call before approving it" in told and "new is now 'Hello'" in told
    assert verify_decisions(store, run_id).ok


def test_a_stale_or_future_record_is_judged_against_the_clock():
    from longrun.auth.check import Credential, check_proof
    from longrun.auth.keys import new_key, public_pem
    from longrun.errors import ProofRefused

    key = new_key()
    who = Signer(principal="alice", key=key)
    now = datetime.now(UTC)
    cred = Credential(key_id=who.key_id, principal="alice", public_key_pem=public_pem(key.public_key()),
                      created_at=now - timedelta(days=1), expires_at=None, revoked_at=None, revoked_reason="",
                      roles=("approver",))
    ok = who.sign(record("r", "apr-1", "0" * 64, who))
    assert check_proof(ok, cred, now).principal == "alice"
    with pytest.raises(ProofRefused, match="issued in the future"):
        check_proof(who.sign(record("r", "apr-1", "0" * 64, who, issued_at=int(now.timestamp()) + 600)), cred, now)
    with pytest.raises(ProofRefused, match="registered only after"):
        check_proof(ok, cred, now - timedelta(days=2))
    viewer = Credential(**{**cred.__dict__, "roles": ("viewer",)})
    with pytest.raises(ProofRefused, match="not approver"):
        check_proof(ok, viewer, now)


async def test_verify_flags_an_approval_used_after_its_key_was_revoked(store, temporal_client, tmp_path):
    """As the database owner, append a gate `allow` under rule `approval` for alice's approved
    action an hour after her key was revoked, chained so the hash chain verifies: the decision
    check names that row."""
    import json

    from sqlalchemy import text

    from longrun.models.canonical import chain_hash
    from longrun.models.gate import GateRule
    from longrun.store.chain import audit_payload

    ws = workspace(tmp_path)
    async with running_worker(temporal_client, store, provider=PlanProvider(plan=EDIT_PLAN)) as h:
        run_id = await h.start(RunSpec(objective="Fix the greeting.", workspace=str(ws), approvers=["alice"]))
        pending = (await h.wait_for(run_id, lambda s: s.status == "waiting_approval")).pending_approval
        await decide.approve(h.client, run_id, pending.approval_id, "alice", store=store)
        assert (await h.result(run_id)).status == "completed"
    [revoked] = store.revoke_credentials("alice", reason="laptop lost")
    assert verify_decisions(store, run_id).ok, "every use came before the revocation"

    late = store.credential(revoked).revoked_at + timedelta(hours=1)
    [allowed] = [r.event for r in store.audit(run_id) if r.kind == "gate_verdict" and r.event.verdict == "allow"
                 and r.event.rule == GateRule.approval.value]
    event = allowed.model_dump(mode="json")
    with store.transaction("forge a use") as s:
        seq, prev = s.execute(text("SELECT coalesce(max(seq), 0) + 1, (SELECT audit_head FROM runs WHERE run_id = :r) "
                                   "FROM audit_events WHERE run_id = :r"), {"r": run_id}).one()
        digest = chain_hash(prev, audit_payload(run_id, seq, "gate_verdict", event, "system", late))
        s.execute(text("INSERT INTO audit_events (run_id, seq, kind, event, actor, created_at, prev_hash, hash) "
                       "VALUES (:r, :seq, 'gate_verdict', CAST(:event AS json), 'system', :at, :prev, :hash)"),
                  {"r": run_id, "seq": seq, "event": json.dumps(event), "at": late, "prev": prev, "hash": digest})
        s.execute(text("UPDATE runs SET audit_head = :h, audit_count = audit_count + 1 WHERE run_id = :r"), {"h": digest, "r": run_id})
    assert store.verify_chain(run_id).ok
    report = verify_decisions(store, run_id)
    assert [p.where for p in report.problems] == [f"audit row {seq} (gate_verdict)"]
    assert f"after key {revoked} of alice was revoked" in report.problems[0].reason
