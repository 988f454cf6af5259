"""The `longrun` CLI driven as a user drives it, on a run that changes course: an approval that
expired is refused and changes nothing, `compact-now` asks a live run for a compaction, and unknown
runs, malformed flags and a missing workspace are refused with what to do and create no run.
Subprocesses of the installed script against the process's embedded stack (split from
tests/test_cli_whole.py so the two halves run on different test workers)."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.support.cli_stack import Cli

pytestmark = pytest.mark.slow


def waiting(s: dict) -> bool:
    return s["status"] == "waiting_approval"


def audit_kinds(cli: Cli, run_id: str) -> list[str]:
    return [r["kind"] for r in cli.json("audit", run_id)["timeline"] if r["source"] == "audit"]


def test_expired_approval_is_refused_and_changes_nothing(cli: Cli, workspace: Path) -> None:
    original = (workspace / "stats.py").read_text()
    run_id, _ = cli.start_and_wait(workspace, "--approval-ttl", "5s")
    requested = next(r for r in cli.json("audit", run_id)["timeline"] if r["kind"] == "approval_requested")
    approval_id = requested["data"]["event"]["approval_id"]
    expires = datetime.fromisoformat(requested["at"]) + timedelta(seconds=5.5)
    time.sleep(max(0.0, (expires - datetime.now(UTC)).total_seconds()))

    late = cli("approve", run_id, approval_id, "--as", "alice")
    assert late.returncode == 1
    assert f"approval {approval_id} expired" in late.stderr and f"longrun say {run_id}" in late.stderr
    assert (workspace / "stats.py").read_text() == original
    kinds = audit_kinds(cli, run_id)
    assert "approval_expired" in kinds and "approval_granted" not in kinds

    # the run waits for a human; cancelling it ends it, and watch reports the failure with exit 1
    assert cli("cancel", run_id).returncode == 0
    watch = cli("watch", run_id)
    assert watch.returncode == 1 and "run cancelled" in watch.stdout


def test_compact_now_asks_a_live_run_for_an_operator_compaction(cli: Cli, workspace: Path) -> None:
    run_id, status = cli.start_and_wait(workspace)
    assert waiting(status)
    asked = cli("compact-now", run_id)
    assert asked.returncode == 0, asked.stderr
    assert "compaction requested" in asked.stdout and "waiting approval: it compacts when it goes on" in asked.stdout
    assert cli("approve", run_id, "--as", "alice").returncode == 0
    watch = cli("watch", run_id, "--interval", "0.2")
    assert watch.returncode == 0, watch.stderr
    assert "compaction started (operator, after turn" in watch.stdout and "compaction (operator, " in watch.stdout
    events = [r["data"]["event"] for r in cli.json("audit", run_id)["timeline"] if r["source"] == "audit"]
    operator = [e for e in events if e["kind"] in ("compaction_started", "compaction")
                and (e.get("trigger") or e.get("report", {}).get("trigger")) == "operator"]
    assert [e["kind"] for e in operator] == ["compaction_started", "compaction"], operator
    assert operator[1]["report"]["outcome"] != "failed"

    late = cli("compact-now", run_id)  # a finished run refuses, and says why
    assert late.returncode == 1 and f"run {run_id} is completed" in late.stderr and "nothing to compact" in late.stderr
    unknown = cli("compact-now", "run-nope")
    assert unknown.returncode == 1 and "unknown run id 'run-nope'" in unknown.stderr


def test_unknown_run_malformed_flags_and_missing_workspace(cli: Cli, tmp_path: Path) -> None:
    for args in (("status", "run-nope"), ("approve", "run-nope", "--as", "alice"), ("audit", "run-nope")):
        done = cli(*args)
        assert done.returncode == 1, args
        assert "unknown run id 'run-nope'" in done.stderr and "longrun runs" in done.stderr

    before = len(cli.json("runs", "--limit", "500"))
    # malformed flags (more of them in-process in test_cli_basics)
    for args in (("start", "--objective", "x", "--workspace", str(tmp_path), "--budget", "lots"),
                 ("approve", "run-x", "--as", "alice", "--ttl", "soon")):
        done = cli(*args)
        assert done.returncode == 2, (args, done.stderr)
        assert "invalid int value: 'lots'" in done.stderr or "--ttl: not a duration: 'soon'" in done.stderr

    missing = cli("start", "--objective", "x", "--workspace", str(tmp_path / "nope"))
    assert missing.returncode == 2
    assert f"workspace {tmp_path / 'nope'} does not exist" in missing.stderr and "nothing was started" in missing.stderr
    bad_model = cli("start", "--objective", "x", "--workspace", str(tmp_path), "--model", "gpt-5")
    assert bad_model.returncode == 2 and "model" in bad_model.stderr
    assert len(cli.json("runs", "--limit", "500")) == before, "a refused start must not create a run"
