"""Keys through the CLI, as an administrator handles them: `longrun approvers` adds, revokes and
expires keys; a revoked or expired key signs nothing until a new key does, revoking a key ends the
scopes it granted, and `audit --verify` flags a use of a scope forged after the revocation. Every
command is the installed `longrun` script against a real embedded stack (split from
tests/test_cli_approvals.py so the two halves run on different test workers)."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from longrun.models.canonical import chain_hash
from longrun.store.chain import audit_payload
from tests.support.cli_stack import Cli, refusals, superuser

pytestmark = pytest.mark.slow


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
