"""The invariant gate's rules, one by one, over a persisted-state snapshot (pure)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from longrun.invariants import GateFacts, evaluate
from longrun.models.canonical import action_hash
from longrun.models.state import Approval, ArtifactRef, Effect, EffectStatus, NextAction, TaskState

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
ARGS = {"path": "a.py", "old": "x", "new": "y"}


def state(**kw) -> TaskState:
    base = dict(run_id="r1", state_version=5, objective="fix it", next_action=NextAction.edit)
    base.update(kw)
    return TaskState(**base)


def facts(s: TaskState, **kw) -> GateFacts:
    base = dict(
        state=s, expected_version=s.state_version, original_objective="fix it", tool_name="apply_patch",
        tool_kind="effect", needs_approval=True, allowed_next_actions=frozenset({NextAction.edit}),
        action_hash=action_hash("apply_patch", ARGS, s.state_version), now=NOW,
    )
    base.update(kw)
    return GateFacts(**base)


def approval(h: str, *, expires: datetime, used: bool = False) -> Approval:
    return Approval(id="apr-1", scope="apply_patch", action_hash=h, approved_by="alice",
                    approved_at=NOW - timedelta(minutes=5), expires_at=expires, used=used)


def test_effect_without_approval_needs_one():
    d = evaluate(facts(state()))
    assert (d.verdict, d.rule) == ("needs_approval", "approval")


def test_unexpired_approval_for_this_exact_action_allows():
    s = state()
    h = action_hash("apply_patch", ARGS, 5)
    d = evaluate(facts(s.model_copy(update={"approvals": [approval(h, expires=NOW + timedelta(minutes=1))]})))
    assert d.verdict == "allow"


@pytest.mark.parametrize("expires, used, prior, rule", [
    (NOW - timedelta(seconds=1), False, "expired", "approval_expired"),
    (NOW + timedelta(hours=1), True, "used", "approval"),
])
def test_expired_or_used_approval_is_never_used(expires, used, prior, rule):
    h = action_hash("apply_patch", ARGS, 5)
    s = state(approvals=[approval(h, expires=expires, used=used)])
    d = evaluate(facts(s, prior_approval=prior))
    assert d.verdict == "deny" and d.rule == rule
    assert ("expired" if prior == "expired" else "already used") in d.reason


def test_approval_for_other_arguments_does_not_cover():
    other = action_hash("apply_patch", {**ARGS, "new": "z"}, 5)
    d = evaluate(facts(state(approvals=[approval(other, expires=NOW + timedelta(hours=1))])))
    assert d.verdict == "needs_approval"


def test_rules_in_order():
    s = state()
    assert evaluate(facts(s, expected_version=4)).rule == "head"
    assert evaluate(facts(s, original_objective="something else")).rule == "objective"
    assert evaluate(facts(state(next_action=NextAction.inspect))).rule == "approval"
    unknown = Effect(action_id="r1/t1/c0", tool="write_file", status=EffectStatus.unknown, idempotency_key="r1/t1/c0")
    d = evaluate(facts(state(effects=[unknown])))
    assert (d.verdict, d.rule) == ("deny", "effects") and "r1/t1/c0" in d.reason
    bad = Effect(action_id="r1/t1/c0", tool="write_file", status=EffectStatus.confirmed, idempotency_key="r1/t1/c0")
    assert evaluate(facts(state(effects=[bad]))).rule == "effects"
    ref = ArtifactRef(sha256="a" * 64, uri="artifact://a", version=1)
    assert evaluate(facts(state(artifact_refs=[ref]), missing_artifacts=("a" * 64,))).rule == "artifacts"
    assert evaluate(facts(s, tool_check_error="old text not found in a.py")).rule == "evidence"


def test_read_tools_only_need_their_own_checks():
    s = state(next_action=NextAction.stop)
    assert evaluate(facts(s, tool_name="read_file", tool_kind="read", needs_approval=False)).verdict == "allow"
    d = evaluate(facts(s, tool_name="read_file", tool_kind="read", tool_check_error="../x escapes the workspace"))
    assert (d.verdict, d.rule) == ("deny", "tool")
    assert evaluate(facts(s, tool_name="nope", tool_kind="unknown")).verdict == "deny"


def test_an_approval_whose_key_was_revoked_is_never_used():
    """The gate's activity asks Postgres whether the approval's key still vouches for it
    (`SigningKeys.approval`); a revoked key turns the approval into a refusal that says what to do."""
    from longrun.auth.check import Credential
    from longrun.auth.key_status import approval_refusal

    h = action_hash("apply_patch", ARGS, 5)
    signed = approval(h, expires=NOW + timedelta(minutes=1)).model_copy(update={"key_id": "a" * 32})
    active = Credential(key_id="a" * 32, principal="alice", public_key_pem="", created_at=NOW - timedelta(days=1),
                        expires_at=None, revoked_at=None, revoked_reason="", roles=("approver",))
    revoked = Credential(**{**active.__dict__, "revoked_at": NOW - timedelta(seconds=5), "revoked_reason": "laptop lost"})
    assert approval_refusal(signed, active, NOW) is None
    refusal = approval_refusal(signed, revoked, NOW)
    assert refusal is not None and "was revoked at" in refusal and "(laptop lost)" in refusal
    assert "`longrun approvers list`" in refusal

    s = state(approvals=[signed])
    assert evaluate(facts(s)).verdict == "allow"
    d = evaluate(facts(s, approval_key_refusal=refusal))
    assert (d.verdict, d.rule) == ("deny", "approval") and d.reason == refusal
    expired = Credential(**{**active.__dict__, "expires_at": NOW - timedelta(seconds=1)})
    assert "expired at" in (approval_refusal(signed, expired, NOW) or "")
    assert approval_refusal(signed.model_copy(update={"key_id": None}), revoked, NOW) is None, "before signing"
