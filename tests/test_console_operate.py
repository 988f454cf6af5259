"""The console's JSON API over real HTTP (`longrun serve` in its own process) against a real dev
stack, worker and run, for the people who act on a run: operators steer it (say, pause, resume,
cancel) and the audit names them, sessions live in PostgreSQL and end on sign-out, and an approver
edits the call before approving it (split from tests/test_console_api.py so the two halves run on
different test workers)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli_stack import Cli, audit_events, pending
from tests.support.console_server import Console, serve

pytestmark = pytest.mark.slow


def test_operators_steer_and_the_audit_names_them(cli: Cli, console: Console, workspace: Path) -> None:
    run_id, _ = cli.start_and_wait(workspace)
    approval_id = pending(cli, run_id)["approval_id"]
    otto = console.session("otto")
    r = otto.post(f"/api/runs/{run_id}/say", json={"text": "Also check the docstring."})
    assert r.status_code == 200, r.text
    assert otto.post(f"/api/runs/{run_id}/pause").status_code == 200
    assert otto.post(f"/api/runs/{run_id}/resume").status_code == 200
    approve = otto.post(f"/api/runs/{run_id}/approvals/{approval_id}/approve", json={})
    assert approve.status_code == 403 and "not approver" in approve.json()["error"]
    assert otto.post(f"/api/runs/{run_id}/cancel").status_code == 200
    assert cli("watch", run_id).returncode == 1  # cancelled
    events = audit_events(cli, run_id)
    asked = [(e["action"], e["outcome"]) for e in events if e["kind"] == "operator_request"]
    assert asked == [("say", "sent"), ("pause", "sent"), ("resume", "sent"), ("cancel", "sent")]
    assert all(e["actor"] == "human:otto" for e in events if e["kind"] == "operator_request")
    assert [e["action"] for e in events if e["kind"] == "run_control"] == ["pause", "resume", "cancel"]
    late = otto.post(f"/api/runs/{run_id}/pause")
    assert late.status_code == 409 and "finished" in late.json()["error"]
    assert "Also check the docstring." not in json.dumps([e for e in events if e["kind"] == "operator_request"])

    # sessions live in PostgreSQL: another console process (a restart, a second replica) knows them
    token = otto.cookies.get("longrun_session")
    with serve(cli) as other:
        assert other.client(cookies={"longrun_session": token}).get("/api/me").json()["principal"] == "otto"

    # signing out ends the session on the server, not only in the browser
    assert otto.delete("/api/session").status_code == 200
    replay = console.client(cookies={"longrun_session": token})
    assert replay.get("/api/me").status_code == 401


def test_edit_then_approve_runs_the_edited_call(cli: Cli, console: Console, workspace: Path) -> None:
    run_id, _ = cli.start_and_wait(workspace)
    p = pending(cli, run_id)
    alice = console.session("alice")
    view = alice.get(f"/api/runs/{run_id}/approvals/{p['approval_id']}").json()
    edited = view["arguments"]["new"].rstrip("\n") + "  # reviewed in the console\n"
    nothing = alice.post(f"/api/runs/{run_id}/approvals/{p['approval_id']}/approve",
                         json={"edit": {"new": view["arguments"]["new"]}})
    assert nothing.status_code == 409 and "changes nothing" in nothing.json()["error"]
    done = alice.post(f"/api/runs/{run_id}/approvals/{p['approval_id']}/approve", json={"edit": {"new": edited}})
    assert done.status_code == 200 and done.json()["edited"], done.text
    assert cli("watch", run_id).returncode == 0
    assert "# reviewed in the console" in (workspace / view["arguments"]["path"]).read_text()
    granted = next(e for e in audit_events(cli, run_id) if e["kind"] == "approval_granted")
    assert granted["edit_id"] is not None and granted["original_action_hash"] == p["action_hash"]
    assert cli("audit", run_id, "--verify").returncode == 0
