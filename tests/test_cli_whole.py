"""The `longrun` CLI driven as a user drives it: subprocesses of the installed script against an
embedded stack of this test process (`longrun dev up` in a temporary LONGRUN_HOME, free ports)
and a `longrun worker` subprocess. Checks exit codes, messages and that a refused command changed
nothing (no approval granted, no run row, the file untouched). An expired approval, `compact-now`
and the refusals of unknown runs and malformed flags are in tests/test_cli_runs.py (split from this
file so the two halves run on different test workers)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli_stack import Cli, tamper

pytestmark = pytest.mark.slow


def waiting(s: dict) -> bool:
    return s["status"] == "waiting_approval"


def audit_kinds(cli: Cli, run_id: str) -> list[str]:
    return [r["kind"] for r in cli.json("audit", run_id)["timeline"] if r["source"] == "audit"]


def test_start_wait_approve_watch_audit(cli: Cli, workspace: Path) -> None:
    original = (workspace / "stats.py").read_text()
    run_id, status = cli.start_and_wait(workspace)
    assert waiting(status) and status["source"] == "temporal"
    pending = status["pending_approval"]
    assert pending["tool"] == "apply_patch" and pending["arguments"]["path"] == "stats.py"
    assert status["answer"]["approve"] == f"longrun approve {run_id} {pending['approval_id']} --as alice"
    assert (workspace / "stats.py").read_text() == original

    approved = cli("approve", run_id, "--as", "alice", "--ttl", "10m")  # APPROVAL omitted: the pending one
    assert approved.returncode == 0, approved.stderr
    assert f"approved {pending['approval_id']}" in approved.stdout and "valid 600 s" in approved.stdout

    watch = cli("watch", run_id, "--interval", "0.2")
    assert watch.returncode == 0, watch.stderr
    assert "context [" in watch.stdout and "run completed" in watch.stdout
    assert (workspace / "stats.py").read_text() != original

    final = cli.json("status", run_id)
    assert final["status"] == "completed" and final["pending_approval"] is None

    audit = cli("audit", run_id, "--verify")
    assert audit.returncode == 0, audit.stderr
    assert "chain verified" in audit.stdout and "approval_granted" in audit.stdout
    for source in ("transcript", "state", "audit"):
        assert f"  {source} " in audit.stdout

    lines = cli("audit", run_id, "--format", "jsonl").stdout.splitlines()
    rows = [json.loads(line) for line in lines]
    assert rows[-1]["summary"]["approvals"]["granted"] == 1 and rows[-1]["verify"] is None
    assert {"gate_verdict", "effect_intent", "effect_settled", "state_version", "user"} <= {r.get("kind") for r in rows}

    csv_out = cli("usage", run_id, "--csv").stdout.splitlines()
    assert csv_out[0].startswith("turn,transcript_seq,input,cache_write,cache_read,output,total_input,estimated")
    model_calls = sum(1 for r in rows if r.get("kind") == "model_called")
    assert len(csv_out) == model_calls + 1 and all(int(line.split(",")[6]) > 0 for line in csv_out[1:])

    # a finished run cannot be steered, and says so
    late = cli("say", run_id, "hello")
    assert late.returncode == 1 and f"run {run_id} is completed" in late.stderr

    # a past audit row altered behind the store's back (as a superuser, trigger disabled) is named
    tamper(cli, "audit_events", f"UPDATE audit_events SET actor = 'mallory' WHERE run_id = '{run_id}' AND seq = 3")
    broken = cli("audit", run_id, "--verify")
    assert broken.returncode == 1
    assert f"run {run_id}: hash chain broken in audit_events at row 3" in broken.stderr
    assert "CHAIN BROKEN" in broken.stdout


def test_wrong_approver_then_reject(cli: Cli, workspace: Path) -> None:
    original = (workspace / "stats.py").read_text()
    run_id, status = cli.start_and_wait(workspace)
    assert waiting(status)

    keyless = cli("approve", run_id, "--as", "bob")  # a name without a key approves nothing
    assert keyless.returncode == 1 and "no private key for 'bob'" in keyless.stderr
    assert "`longrun approvers add bob`" in keyless.stderr
    assert cli("approvers", "add", "mallory").returncode == 0  # a real key, but nobody's approver
    wrong = cli("approve", run_id, "--as", "mallory")
    assert wrong.returncode == 1
    assert "'mallory' is not an approver" in wrong.stderr and "approvers: alice" in wrong.stderr
    bogus = cli("approve", run_id, "apr-0000", "--as", "alice")
    assert bogus.returncode == 1 and "does not match the pending action" in bogus.stderr

    assert cli.json("status", run_id)["status"] == "waiting_approval"  # the refusals changed nothing

    rejected = cli("reject", run_id, "--as", "alice", "--reason", "not this way")
    assert rejected.returncode == 0, rejected.stderr
    assert cli("watch", run_id).returncode == 0  # the agent notes the rejection and completes its review
    assert (workspace / "stats.py").read_text() == original
    events = [r["data"]["event"] for r in cli.json("audit", run_id)["timeline"] if r["source"] == "audit"]
    kinds = [e["kind"] for e in events]
    assert "approval_rejected" in kinds and "approval_granted" not in kinds
    assert not [e for e in events if e["kind"] == "effect_intent" and e["tool"] == "apply_patch"]


def test_dev_status_reports_the_stack(cli: Cli) -> None:
    st = cli.json("dev", "status")
    assert st["ok"] is True and st["database_ok"] and st["temporal_ok"]
