"""Approvals you can prove, through the CLI where a person would be: keys made and revoked with
`longrun approvers`, decisions signed by `approve`/`reject`, standing approvals with `grant`, and
`audit --verify` catching a superuser who rewrites who approved what, even with the hash chain
recomputed. Every command is the installed `longrun` script against a real embedded stack."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest

from longrun.models.canonical import chain_hash
from longrun.store import libpq_url, sqlalchemy_url
from longrun.store.chain import audit_payload
from tests.support.cli_stack import Cli

pytestmark = pytest.mark.slow


def refusals(cli: Cli, run_id: str) -> list[str]:
    return [r["data"]["event"]["reason"] for r in cli.json("audit", run_id)["timeline"] if r["kind"] == "approval_refused"]


def superuser(cli: Cli) -> psycopg.Connection:
    url = json.loads((cli.home / "stack.json").read_text())["database_url"]
    return psycopg.connect(libpq_url(sqlalchemy_url(url).set(username="postgres", password=None)), autocommit=True)


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


def test_revoked_and_expired_keys_are_refused_until_a_new_key_signs(cli: Cli, workspace: Path) -> None:
    for name in ("carol", "dave"):
        added = cli("approvers", "add", name)
        assert added.returncode == 0, added.stderr
    run_id, _status = cli.start_and_wait(workspace, "--approver", "carol", "--approver", "dave")

    revoked = cli("approvers", "revoke", "carol", "--reason", "laptop lost")
    assert revoked.returncode == 0 and "revoked" in revoked.stdout
    listed = {r["principal"]: r for r in cli.json("approvers", "list")["principals"]}
    assert listed["carol"]["status"] == "revoked" and listed["alice"]["status"] == "active"
    refused = cli("approve", run_id, "--as", "carol")
    assert refused.returncode == 1 and "was revoked at" in refused.stderr and "laptop lost" in refused.stderr
    assert "approvers add carol --new-key" in refused.stderr

    # a key that lives one second, added once `start` has checked the approvers; the test waits for
    # the expiry the command reports (none left, usually: a `longrun` command takes longer than that)
    short = cli.json("approvers", "add", "dave", "--new-key", "--expires", "1s", "--key-file", str(cli.home / "dave-1s.pem"))
    expires = datetime.fromisoformat(short["expires_at"])
    time.sleep(max(0.0, (expires - datetime.now(UTC)).total_seconds()) + 0.2)
    keys = {r["key_id"]: r for r in cli.json("approvers", "list")["principals"]}
    assert keys[short["key_id"]]["status"] == "expired" and keys[short["key_id"]]["expires_at"] == short["expires_at"]
    expired = cli("approve", run_id, "--as", "dave", "--key", str(cli.home / "dave-1s.pem"))
    assert expired.returncode == 1 and f"key {short['key_id']} of dave expired at" in expired.stderr
    assert cli.json("status", run_id)["status"] == "waiting_approval"

    renewed = cli("approvers", "add", "carol", "--new-key", "--key-file", str(cli.home / "carol-2.pem"))
    assert renewed.returncode == 0, renewed.stderr
    assert cli("approve", run_id, "--as", "carol", "--key", str(cli.home / "carol-2.pem")).returncode == 0
    assert cli("watch", run_id, "--interval", "0.2").returncode == 0
    reasons = refusals(cli, run_id)
    assert any("revoked" in r for r in reasons) and any("expired" in r for r in reasons)
    assert cli("audit", run_id, "--verify").returncode == 0, "decisions signed before a revocation stay verifiable"


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


def forge_audit_row(cli: Cli, run_id: str, kind: str, event: dict, actor: str, created_at) -> int:
    """What the database owner can do: append a row to a run's audit with a time of their
    choosing, chained onto the head so the hash chain verifies. Returns its seq."""
    with superuser(cli) as conn:
        seq, prev = conn.execute("SELECT coalesce(max(seq), 0) + 1, (SELECT audit_head FROM runs WHERE run_id = %s) "
                                 "FROM audit_events WHERE run_id = %s", (run_id, run_id)).fetchone()
        digest = chain_hash(prev, audit_payload(run_id, seq, kind, event, actor, created_at))
        conn.execute("INSERT INTO audit_events (run_id, seq, kind, event, actor, created_at, prev_hash, hash) "
                     "VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                     (run_id, seq, kind, json.dumps(event), actor, created_at, prev, digest))
        conn.execute("UPDATE runs SET audit_head = %s, audit_count = audit_count + 1 WHERE run_id = %s",
                     (digest, run_id))
    return seq


def test_revoking_a_key_ends_its_scopes_and_verify_flags_a_use_after_it(cli: Cli, workspace: Path) -> None:
    from datetime import datetime, timedelta

    assert cli("approvers", "add", "gina").returncode == 0
    run_id, _status = cli.start_and_wait(workspace, "--approver", "gina")
    grant = ("grant", run_id, "--tool", "apply_patch", "--paths", "**/*.py", "--max-uses", "3", "--as", "gina")
    too_long = cli(*grant, "--ttl", "2d")
    assert too_long.returncode == 1
    assert "longer than the longest a scope may stand (1d" in too_long.stderr and "LONGRUN_SCOPE_MAX_TTL" in too_long.stderr
    scope_id = cli.json(*grant, "--ttl", "1h")["scope_id"]

    revoked = cli("approvers", "revoke", "gina", "--reason", "left the team")
    assert revoked.returncode == 0, revoked.stderr
    assert f"scope {scope_id} of run {run_id}" in revoked.stdout
    deadline = time.monotonic() + 30
    while True:  # the running workflow ends it (a signal): wait for the audit to say so
        ended = [r for r in cli.json("audit", run_id)["timeline"] if r["kind"] == "scope_ended"]
        if ended or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert [(r["data"]["event"]["scope_id"], r["data"]["event"]["reason"].split(":")[0]) for r in ended] == [
        (scope_id, "key_revoked")]
    assert [s["in_force"] for s in cli.json("status", run_id)["scopes"]] == [False]
    assert cli("audit", run_id, "--verify").returncode == 0, "nothing used the scope after the revocation"

    gina = next(r for r in cli.json("approvers", "list")["principals"] if r["principal"] == "gina")
    late = datetime.fromisoformat(gina["revoked_at"]) + timedelta(hours=1)
    use = {"kind": "scope_used", "scope_id": scope_id, "action_id": f"{run_id}/t9/c0", "tool": "apply_patch",
           "path": "stats.py", "action_hash": "e" * 64, "uses_left": 2}
    seq = forge_audit_row(cli, run_id, "scope_used", use, "human:gina", late)
    broken = cli("audit", run_id, "--verify")
    assert broken.returncode == 1
    assert "chain verified" in broken.stdout, "the forger did chain the row"
    assert f"decision check failed at audit row {seq} (scope_used)" in broken.stderr
    assert f"after key {gina['key_id']} of gina was revoked" in broken.stderr
    assert cli("reject", run_id, "--as", "alice", "--reason", "done here").returncode == 0
