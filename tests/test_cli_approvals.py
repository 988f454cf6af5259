"""Approvals you can prove, through the CLI where a person would be: decisions signed by
`approve`/`reject` (a key that is not yours is refused), standing approvals with `grant`, and
`audit --verify` catching a superuser who rewrites who approved what, even with the hash chain
recomputed. Keys made, revoked and expired are in tests/test_cli_keys.py (split from this file so
the two halves run on different test workers). Every command is the installed `longrun` script
against a real embedded stack."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from longrun.models.canonical import chain_hash
from longrun.store.chain import audit_payload
from tests.support.cli_stack import Cli, refusals, superuser

pytestmark = pytest.mark.slow


def rewrite_decision(cli: Cli, run_id: str, seq: int, approver: str, action_hash: str) -> None:
    """What a database superuser can do: rewrite the approver and the action hash of a past
    decision (in the event and in its signed record), then recompute the audit chain from that
    row on and move the chain head, so the hash chain verifies again."""
    with superuser(cli) as conn:
        conn.execute("ALTER TABLE audit_events DISABLE TRIGGER audit_events_append_only")
        try:
            rows = conn.execute("SELECT seq, kind, event, actor, created_at, prev_hash, hash FROM audit_events "
                                "WHERE run_id = %s ORDER BY seq", (run_id,)).fetchall()
            prev = None
            for number, kind, event, actor, created_at, _prev_hash, digest in rows:
                if number == seq:
                    old_approver, old_hash = event["approver"], event["action_hash"]
                    event["approver"], event["action_hash"] = approver, action_hash
                    proof = event["proof"]
                    proof["payload"] = proof["payload"].replace(f'"principal":"{old_approver}"',
                                                                f'"principal":"{approver}"').replace(old_hash, action_hash)
                    actor = f"human:{approver}"
                if number >= seq:
                    digest = chain_hash(prev, audit_payload(run_id, number, kind, event, actor, created_at))
                    conn.execute("UPDATE audit_events SET event = %s, actor = %s, prev_hash = %s, hash = %s "
                                 "WHERE run_id = %s AND seq = %s",
                                 (json.dumps(event), actor, prev, digest, run_id, number))
                prev = digest
            conn.execute("UPDATE runs SET audit_head = %s WHERE run_id = %s", (prev, run_id))
        finally:
            conn.execute("ALTER TABLE audit_events ENABLE TRIGGER audit_events_append_only")


def test_wrong_key_is_refused_a_signed_approval_counts_and_a_rewrite_is_caught(cli: Cli, workspace: Path) -> None:
    run_id, status = cli.start_and_wait(workspace)
    approval_id = status["pending_approval"]["approval_id"]
    assert cli("approvers", "add", "eve", "--key-file", str(cli.home / "eve.pem")).returncode == 0

    forged = cli("approve", run_id, "--as", "alice", "--key", str(cli.home / "eve.pem"))
    assert forged.returncode == 1
    assert "belongs to 'eve', not to 'alice': sign with your own key" in forged.stderr
    assert "the request is still open" in forged.stderr
    assert cli.json("status", run_id)["status"] == "waiting_approval"
    assert any("belongs to 'eve'" in r for r in refusals(cli, run_id))

    approved = cli("approve", run_id, "--as", "alice")
    assert approved.returncode == 0, approved.stderr
    again = cli("approve", run_id, approval_id, "--as", "alice")
    assert again.returncode == 1, "a decided request cannot be approved again"
    assert cli("watch", run_id, "--interval", "0.2").returncode == 0

    verified = cli("audit", run_id, "--verify")
    assert verified.returncode == 0, verified.stderr
    assert "decisions verified: 1 signed decisions verify against the registered keys" in verified.stdout

    granted = next(r for r in cli.json("audit", run_id)["timeline"] if r["kind"] == "approval_granted")
    rewrite_decision(cli, run_id, granted["seq"], approver="ceo", action_hash="f" * 64)
    broken = cli("audit", run_id, "--verify")
    assert broken.returncode == 1
    assert "chain verified" in broken.stdout, "the superuser did recompute the chain"
    assert f"decision check failed at audit row {granted['seq']} (approval_granted)" in broken.stderr
    assert "belongs to 'alice', not to 'ceo'" in broken.stderr  # the key that signed is alice's
    assert "is not a verified signed decision" in broken.stderr  # and the state's approval matches nothing signed
    assert "DECISIONS DO NOT VERIFY" in broken.stdout


def test_edit_then_approve_and_a_standing_grant_through_the_cli(cli: Cli, workspace: Path) -> None:
    run_id, status = cli.start_and_wait(workspace)
    pending = status["pending_approval"]

    bad = cli("approve", run_id, "--as", "alice", "--edit", "not json")
    assert bad.returncode == 2 and "--edit: not JSON" in bad.stderr
    granted = cli.json("grant", run_id, "--tool", "apply_patch", "--paths", "**/*.py", "--max-uses", "3", "--ttl", "1h",
                       "--as", "alice")
    scope_id = granted["scope_id"]
    shown = cli.json("status", run_id)["scopes"]
    assert [(s["scope_id"], s["uses_left"], s["in_force"]) for s in shown] == [(scope_id, 3, True)]
    assert f"scope {scope_id}: apply_patch on **/*.py, 3 of 3 uses left, by alice" in cli("status", run_id).stdout

    new_text = pending["arguments"]["new"].rstrip("\n") + "  # reviewed\n"
    edited = cli("approve", run_id, "--as", "alice", "--edit", json.dumps({"new": new_text}))
    assert edited.returncode == 0, edited.stderr
    assert "with the arguments as you edited them" in edited.stdout
    assert cli("watch", run_id, "--interval", "0.2").returncode == 0
    assert "# reviewed" in (workspace / pending["arguments"]["path"]).read_text()

    ended = cli("revoke-grant", run_id, scope_id, "--as", "alice")
    assert ended.returncode == 1 and "has already finished" in ended.stderr, "a finished run takes no more decisions"
    audit = cli("audit", run_id, "--verify")
    assert audit.returncode == 0, audit.stderr
    assert "scope_granted" in audit.stdout and "arguments edited" in audit.stdout
