"""Standing approvals (scopes): a signed grant covers the listed tools on the matching paths, at
most so many times, until it expires or a constraint arrives; every use is gated and audited
with its action hash; anything outside it waits for a human as before."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from longrun.auth import Signer
from longrun.auth.audit_check import verify_decisions
from longrun.auth.scopes import constraints_sha256, covering_scope, path_matches
from longrun.client import decide
from longrun.client import runs as client_runs
from longrun.errors import ApprovalError
from longrun.models.audit import ApprovalRequested, GateVerdict, ScopeEnded, ScopeGranted, ScopeUsed
from longrun.models.spec import RunSpec
from longrun.models.state import Scope, TaskState
from tests.support.harness import running_worker
from tests.support.policy import PlanProvider

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(("path", "glob", "covered"), [
    ("src/a.py", "src/**", True),
    ("src/deep/er/a.py", "src/**", True),
    ("src/a.py", "src/*.py", True),
    ("src/deep/a.py", "src/*.py", False),  # `*` stays within one segment
    ("./src/a.py", "src/**", True),
    ("lib/a.py", "src/**", False),
    ("src/../lib/a.py", "src/**", False),  # a path that climbs out is never covered
    ("/abs/src/a.py", "src/**", False),
    ("a.py", "**/*.py", True),
    ("x/y/a.py", "**/*.py", True),
    ("x/y/a.txt", "**/*.py", False),
])
def test_globs_match_workspace_paths_like_a_shell(path: str, glob: str, covered: bool) -> None:
    assert path_matches(path, glob) is covered


def state_with(scope: Scope, constraints: list[str] | None = None) -> TaskState:
    return TaskState(run_id="r", state_version=3, objective="o", constraints=constraints or ["c1"], scopes=[scope])


def scope(**changes) -> Scope:
    fields = dict(id="scp-0123456789abcdef", tools=["apply_patch"], paths=["src/**"], max_uses=2, uses=0,
                  granted_by="alice", key_id="0" * 32, granted_at=NOW, expires_at=NOW + timedelta(hours=2),
                  constraints_sha256=constraints_sha256(["c1"]))
    return Scope(**{**fields, **changes})


def test_each_scope_check_holds() -> None:
    args = {"path": "src/a.py", "old": "x", "new": "y"}
    assert covering_scope(state_with(scope()), "apply_patch", args, NOW)[0] is not None
    cases = {
        "another tool": (state_with(scope()), "write_file", args, NOW, ""),
        "another path": (state_with(scope()), "apply_patch", {**args, "path": "lib/a.py"}, NOW, ""),
        "used up": (state_with(scope(uses=2)), "apply_patch", args, NOW, "is used up (2 of 2 uses)"),
        "expired": (state_with(scope()), "apply_patch", args, NOW + timedelta(hours=3), "expired at"),
        "a constraint since": (state_with(scope(), ["c1", "c2"]), "apply_patch", args, NOW, "other constraints"),
        "ended": (state_with(scope(ended="revoked by alice")), "apply_patch", args, NOW, "ended: revoked by alice"),
    }
    for what, (state, tool, arguments, now, reason) in cases.items():
        covering, why = covering_scope(state, tool, arguments, now)
        assert covering is None, what
        assert reason in why, (what, why)


pytestmark_slow = pytest.mark.slow


def patch(path: str, old: str, new: str) -> list[tuple[str, dict]]:
    return [("apply_patch", {"path": path, "old": old, "new": new})]


def refactor_workspace(tmp_path):
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "lib").mkdir()
    for name in ("a", "b", "c", "d"):
        (ws / "src" / f"{name}.py").write_text(f"value = old_name_{name}\n")
    (ws / "lib" / "e.py").write_text("value = old_name_e\n")
    return ws


@pytestmark_slow
async def test_a_scope_covers_its_uses_and_nothing_else(store, temporal_client, tmp_path):
    ws = refactor_workspace(tmp_path)
    plan = [
        [("set_next_action", {"next_action": "edit"})],
        patch("src/a.py", "old_name_a", "new_name_a"),   # before the grant: a human approves it
        patch("src/b.py", "old_name_b", "new_name_b"),   # covered (use 1)
        patch("src/c.py", "old_name_c", "new_name_c"),   # covered (use 2)
        patch("src/d.py", "old_name_d", "new_name_d"),   # used up: waits for a human
        patch("lib/e.py", "old_name_e", "new_name_e"),   # outside the globs: waits for a human
        [("set_next_action", {"next_action": "stop"})],
    ]
    async with running_worker(temporal_client, store, provider=PlanProvider(plan=plan)) as h:
        run_id = await h.start(RunSpec(objective="Rename old_name to new_name.", workspace=str(ws), approvers=["alice"]))
        first = (await h.wait_for(run_id, lambda s: s.status == "waiting_approval")).pending_approval
        with pytest.raises(ApprovalError, match="cannot be scoped"):
            await decide.grant_scope(h.client, store, run_id, "alice", tools=["run_command"], paths=["src/**"],
                                     max_uses=2, ttl_seconds=3600)
        with pytest.raises(ApprovalError, match="must be relative to the workspace"):
            await decide.grant_scope(h.client, store, run_id, "alice", tools=["apply_patch"], paths=["/etc/**"],
                                     max_uses=2, ttl_seconds=3600)
        with pytest.raises(ApprovalError, match="'mallory' is not an approver"):
            await decide.grant_scope(h.client, store, run_id, "mallory", tools=["apply_patch"], paths=["src/**"],
                                     max_uses=2, ttl_seconds=3600)
        scope_id, answer = await decide.grant_scope(h.client, store, run_id, "alice", tools=["apply_patch"],
                                                    paths=["src/**"], max_uses=2, ttl_seconds=3600)
        assert answer.startswith(f"granted {scope_id}: apply_patch on src/**, at most 2 uses")
        await decide.approve(h.client, run_id, first.approval_id, "alice", store=store)
        third = (await h.wait_for(run_id, lambda s: s.status == "waiting_approval"
                                  and s.pending_approval.approval_id != first.approval_id)).pending_approval
        assert third.arguments["path"] == "src/d.py"
        await decide.reject(h.client, run_id, third.approval_id, "alice", "not this one")
        fourth = (await h.wait_for(run_id, lambda s: s.status == "waiting_approval"
                                   and s.pending_approval.approval_id not in (first.approval_id, third.approval_id)
                                   )).pending_approval
        assert fourth.arguments["path"] == "lib/e.py"
        await decide.reject(h.client, run_id, fourth.approval_id, "alice", "outside the refactor")
        assert (await h.result(run_id)).status == "completed"

    texts = {p: (ws / p).read_text() for p in ("src/a.py", "src/b.py", "src/c.py", "src/d.py", "lib/e.py")}
    assert [p for p, t in texts.items() if "new_name" in t] == ["src/a.py", "src/b.py", "src/c.py"]
    events = [r.event for r in store.audit(run_id)]
    uses = [e for e in events if isinstance(e, ScopeUsed)]
    assert [(u.path, u.uses_left) for u in uses] == [("src/b.py", 1), ("src/c.py", 0)]
    verdicts = {e.action_hash: e for e in events if isinstance(e, GateVerdict) and e.tool == "apply_patch"}
    assert all(verdicts[u.action_hash].rule == "scope" for u in uses), "each use is audited with its gated action"
    requested = [e for e in events if isinstance(e, ApprovalRequested)]
    assert len(requested) == 3, "the grant answered no request: a, then d (used up) and e (outside) asked a human"
    used_up = [e for e in events if isinstance(e, GateVerdict) and e.verdict == "needs_approval" and "used up" in e.reason]
    assert used_up, "the gate says why the scope did not cover d"
    [granted] = [e for e in events if isinstance(e, ScopeGranted)]
    assert granted.proof.key_id == Signer.load("alice").key_id
    assert store.all_scopes(run_id)[0].uses == 2
    assert verify_decisions(store, run_id).ok


@pytestmark_slow
async def test_a_new_constraint_and_revoke_grant_end_a_scope(store, temporal_client, tmp_path):
    ws = refactor_workspace(tmp_path)
    plan = [
        [("set_next_action", {"next_action": "edit"})],
        patch("src/a.py", "old_name_a", "new_name_a"),  # waits; the constraint voids it
        patch("src/b.py", "old_name_b", "new_name_b"),  # the scope has ended: waits again
        [("set_next_action", {"next_action": "stop"})],
    ]
    async with running_worker(temporal_client, store, provider=PlanProvider(plan=plan)) as h:
        run_id = await h.start(RunSpec(objective="Rename old_name to new_name.", workspace=str(ws), approvers=["alice"]))
        first = (await h.wait_for(run_id, lambda s: s.status == "waiting_approval")).pending_approval
        kept, _ = await decide.grant_scope(h.client, store, run_id, "alice", tools=["apply_patch"], paths=["src/**"],
                                           max_uses=10, ttl_seconds=3600)
        revoked, _ = await decide.grant_scope(h.client, store, run_id, "alice", tools=["write_file"], paths=["**"],
                                              max_uses=10, ttl_seconds=3600)
        assert (await decide.revoke_scope(h.client, store, run_id, revoked, "alice")) == f"ended {revoked} as alice"
        await client_runs.say(h.client, store, run_id, "Do not touch lib/.", constraint=True)
        second = (await h.wait_for(run_id, lambda s: s.status == "waiting_approval"
                                   and s.pending_approval.approval_id != first.approval_id)).pending_approval
        assert second.arguments["path"] == "src/b.py", "after the constraint the scope covers nothing"
        await decide.reject(h.client, run_id, second.approval_id, "alice", "enough")
        assert (await h.result(run_id)).status == "completed"
    ended = {e.scope_id: e for e in (r.event for r in store.audit(run_id)) if isinstance(e, ScopeEnded)}
    assert ended[revoked].by == "alice" and ended[revoked].proof is not None
    assert ended[kept].reason == "a constraint was added" and ended[kept].proof is None
    assert {s.id: s.ended for s in store.all_scopes(run_id)} == {
        kept: "a constraint was added", revoked: "revoked by alice"}
    assert not [r for r in store.audit(run_id) if isinstance(r.event, ScopeUsed)]
    assert verify_decisions(store, run_id).ok


async def _audit_until(store, run_id: str, found, timeout: float = 30.0):
    """Poll the run's audit (a signal is handled asynchronously) until `found(events)` is truthy."""
    import asyncio

    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        events = [r.event for r in store.audit(run_id)]
        hit = found(events)
        if hit or asyncio.get_running_loop().time() > deadline:
            return hit
        await asyncio.sleep(0.2)


@pytestmark_slow
async def test_a_revoked_key_covers_nothing_more_and_revocation_ends_its_scopes(store, temporal_client, tmp_path):
    from longrun.client import revocation

    ws = refactor_workspace(tmp_path)
    plan = [
        [("set_next_action", {"next_action": "edit"})],
        patch("lib/e.py", "old_name_e", "new_name_e"),  # outside the scope: waits (the scope is granted meanwhile)
        patch("src/a.py", "old_name_a", "new_name_a"),  # covered: use 1, alice's key still active
        patch("lib/e.py", "old_name_e", "new_name_e"),  # waits: alice's key is revoked meanwhile
        patch("src/b.py", "old_name_b", "new_name_b"),  # the scope's key is revoked: it covers nothing
        [("set_next_action", {"next_action": "stop"})],
    ]
    async with running_worker(temporal_client, store, provider=PlanProvider(plan=plan)) as h:
        run_id = await h.start(RunSpec(objective="Rename old_name to new_name.", workspace=str(ws),
                                       approvers=["alice", "bob"]))
        first = (await h.wait_for(run_id, lambda s: s.status == "waiting_approval")).pending_approval
        with pytest.raises(ApprovalError, match="longer than the longest a scope may stand"):
            await decide.grant_scope(h.client, store, run_id, "alice", tools=["apply_patch"], paths=["src/**"],
                                     max_uses=10, ttl_seconds=3 * 86400)
        with pytest.raises(ApprovalError, match="longer than the longest a scope may stand"):  # the worker's own check
            await decide.grant_scope(h.client, store, run_id, "alice", tools=["apply_patch"], paths=["src/**"],
                                     max_uses=10, ttl_seconds=3 * 86400, max_ttl_seconds=10 * 86400)
        scope_id, _ = await decide.grant_scope(h.client, store, run_id, "alice", tools=["apply_patch"],
                                               paths=["src/**"], max_uses=10, ttl_seconds=3600)
        await decide.reject(h.client, run_id, first.approval_id, "bob", "not lib")
        second = (await h.wait_for(run_id, lambda s: s.status == "waiting_approval"
                                   and s.pending_approval.approval_id != first.approval_id)).pending_approval
        # revoked in Postgres only (no scope ended): the check at each use is what refuses
        assert store.revoke_credentials("alice", reason="laptop lost")
        await decide.reject(h.client, run_id, second.approval_id, "bob", "still not lib")
        third = (await h.wait_for(run_id, lambda s: s.status == "waiting_approval"
                                  and s.pending_approval.approval_id not in (first.approval_id, second.approval_id)
                                  )).pending_approval
        assert third.arguments["path"] == "src/b.py", "the scope of a revoked key covered nothing: a human is asked"
        verdict = next(r.event for r in reversed(store.audit(run_id)) if isinstance(r.event, GateVerdict)
                       and r.event.action_hash == third.action_hash)
        assert verdict.verdict == "needs_approval"
        assert f"scope {scope_id} was granted with key" in verdict.reason and "was revoked at" in verdict.reason
        assert "(laptop lost)" in verdict.reason and "`longrun approvers list`" in verdict.reason
        assert store.all_scopes(run_id)[0].ended == "", "nothing has ended the scope yet"

        ended = await revocation.end_revoked_scopes(h.client, store, [Signer.load("alice").key_id])
        assert [(e.run_id, e.scope_ids) for e in ended] == [(run_id, [scope_id])]
        ending = await _audit_until(store, run_id, lambda evs: [e for e in evs if isinstance(e, ScopeEnded)])
        assert [(e.scope_id, e.reason.split(":")[0], e.by) for e in ending] == [(scope_id, "key_revoked", "owner")]
        assert store.all_scopes(run_id)[0].ended.startswith("key_revoked: key ")
        await decide.reject(h.client, run_id, third.approval_id, "bob", "enough")
        assert (await h.result(run_id)).status == "completed"

    texts = {p: (ws / p).read_text() for p in ("src/a.py", "src/b.py", "lib/e.py")}
    assert [p for p, t in texts.items() if "new_name" in t] == ["src/a.py"]
    assert [u.path for u in (r.event for r in store.audit(run_id)) if isinstance(u, ScopeUsed)] == ["src/a.py"]
    assert verify_decisions(store, run_id).ok, "every use came before the revocation"


async def test_revocation_ends_the_scopes_of_a_run_no_workflow_runs(store):
    """No Temporal to tell (it does not answer, or the run has finished): the scopes of the
    revoked key are ended in Postgres directly, by compare-and-set, with the same audit event;
    a scope of another key stays; a second revocation pass changes nothing."""
    from longrun.client import revocation

    alice, bob = Signer.load("alice"), Signer.load("bob")
    store.create_run("run-keys", RunSpec(objective="o", workspace="/tmp/ws", approvers=["alice", "bob"]))
    head = store.load_state("run-keys")
    mine, theirs = (scope(id=f"scp-{n:016x}", key_id=k, granted_by=who, granted_at=datetime.now(UTC),
                          expires_at=datetime.now(UTC) + timedelta(hours=1),
                          constraints_sha256=constraints_sha256(head.constraints))
                    for n, k, who in ((1, alice.key_id, "alice"), (2, bob.key_id, "bob")))
    store.reapply_on_head("run-keys", lambda s: s.model_copy(update={"scopes": [mine, theirs]}), "tests", "scopes")
    assert store.runs_with_open_scopes([alice.key_id]) == [("run-keys", "running", [mine.id])]

    assert store.revoke_credentials("alice", reason="left") == [alice.key_id]
    done = await revocation.end_revoked_scopes(None, store, [alice.key_id])
    assert [(e.run_id, e.scope_ids, e.how) for e in done] == [("run-keys", [mine.id], "ended")]
    scopes = {s.id: s.ended for s in store.all_scopes("run-keys")}
    assert scopes[theirs.id] == "" and scopes[mine.id].startswith(f"key_revoked: key {alice.key_id} of alice was revoked")
    [ended] = [r for r in store.audit("run-keys") if isinstance(r.event, ScopeEnded)]
    assert (ended.event.scope_id, ended.event.by, ended.actor) == (mine.id, "owner", "owner")
    assert "(left)" in ended.event.reason
    assert await revocation.end_revoked_scopes(None, store, [alice.key_id]) == []
    assert store.runs_with_open_scopes([alice.key_id]) == []
