"""The console's JSON API over real HTTP (`longrun serve` in its own process) against a real
dev stack, worker and run: who may do what, CSRF, errors that say what to do, a signed approval
made with a console key that the worker verified and `audit --verify` re-checks, the paged
timeline and the live event stream. Operators steering and an edited approval are in
tests/test_console_operate.py (split from this file so the two halves run on different test
workers)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.support.cli_stack import Cli, audit_events, pending
from tests.support.console_server import Console

pytestmark = pytest.mark.slow


def endpoints(run_id: str, approval_id: str) -> list[tuple[str, str, dict | None]]:
    base = f"/api/runs/{run_id}"
    return [
        ("GET", "/api/me", None), ("GET", "/api/runs", None), ("GET", base, None), ("GET", base + "/timeline", None),
        ("GET", base + "/audit", None), ("GET", base + "/events", None), ("GET", "/api/approvals", None),
        ("GET", f"{base}/approvals/{approval_id}", None),
        ("POST", f"{base}/approvals/{approval_id}/approve", {}),
        ("POST", f"{base}/approvals/{approval_id}/reject", {"reason": "no"}),
        ("POST", base + "/say", {"text": "stop"}), ("POST", base + "/pause", None), ("POST", base + "/resume", None),
        ("POST", base + "/cancel", None), ("DELETE", "/api/session", None),
    ]


def test_nothing_without_a_session_and_viewers_only_read(cli: Cli, console: Console, workspace: Path) -> None:
    run_id, _ = cli.start_and_wait(workspace)
    approval_id = pending(cli, run_id)["approval_id"]
    before = len(audit_events(cli, run_id))

    anonymous = console.client()
    health = anonymous.get("/healthz")
    assert health.json() == {"status": "ok"}
    assert "frame-ancestors 'none'" in health.headers["content-security-policy"]
    assert health.headers["x-content-type-options"] == "nosniff"
    for method, path, body in endpoints(run_id, approval_id):
        r = anonymous.request(method, path, json=body)
        assert r.status_code == 401, (method, path, r.status_code, r.text)
        assert "sign in" in r.json()["error"], r.text
        assert r.headers["cache-control"] == "no-store"
    page = anonymous.get("/inbox", follow_redirects=False)  # a page sends the person to the sign-in page
    assert page.status_code == 303 and page.headers["location"] == "/login?next=/inbox"
    assert len(audit_events(cli, run_id)) == before  # nothing changed

    wrong = anonymous.post("/api/session", json={"name": "alice", "password": "not-her-password"})
    nobody = anonymous.post("/api/session", json={"name": "nobody", "password": "whatever-it-is"})
    assert wrong.status_code == nobody.status_code == 401
    assert wrong.json()["error"] == nobody.json()["error"]  # one message: no telling who exists
    assert "longrun approvers add NAME --console" in wrong.json()["error"]

    vera = console.session("vera")
    assert vera.get("/api/me").json()["roles"] == ["viewer"]
    assert vera.get(f"/api/runs/{run_id}").json()["pending_approval"]["can_decide"] is False
    assert vera.get("/api/approvals").json() == {"approvals": []}  # nothing she may decide
    listed = vera.get("/api/approvals", params={"all": "true"}).json()["approvals"]
    assert [a["approval_id"] for a in listed if a["run_id"] == run_id] == [approval_id]
    for method, path, body in endpoints(run_id, approval_id):
        if method == "GET" and not path.endswith("/events"):
            assert vera.request(method, path).status_code == 200, path
        elif method == "POST":
            r = vera.request(method, path, json=body)
            assert r.status_code == 403, (path, r.text)
            assert "vera has roles viewer" in r.json()["error"], r.text
            assert "longrun approvers add vera --role" in r.json()["error"]
    assert pending(cli, run_id)["approval_id"] == approval_id  # still waiting, nothing decided
    refused = [e for e in audit_events(cli, run_id)[before:]]
    assert {e["kind"] for e in refused} == {"approval_refused", "operator_request"}
    assert all(e["actor"] == "human:vera" for e in refused)
    assert {e["action"] for e in refused if e["kind"] == "operator_request"} == {"say", "pause", "resume", "cancel"}
    assert all(e["outcome"] == "refused" for e in refused if e["kind"] == "operator_request")

    # a signed-in approver without the CSRF token changes nothing either
    alice = console.session("alice")
    del alice.headers["X-CSRF-Token"]
    r = alice.post(f"/api/runs/{run_id}/approvals/{approval_id}/approve", json={})
    assert r.status_code == 403 and "CSRF" in r.json()["error"]
    forged = console.session("alice")
    r = forged.post(f"/api/runs/{run_id}/approvals/{approval_id}/approve", json={},
                    headers={"Origin": "https://evil.example"})
    assert r.status_code == 403 and "evil.example" in r.json()["error"]
    sandboxed = forged.post(f"/api/runs/{run_id}/approvals/{approval_id}/approve", json={}, headers={"Origin": "null"})
    assert sandboxed.status_code == 403  # what a sandboxed frame or a local file sends
    assert pending(cli, run_id)["approval_id"] == approval_id
    assert cli("cancel", run_id).returncode == 0


def test_an_approval_signed_with_a_console_key(cli: Cli, console: Console, workspace: Path) -> None:
    run_id, _ = cli.start_and_wait(workspace)
    p = pending(cli, run_id)
    alice = console.session("alice")
    key_id = alice.get("/api/me").json()["key_id"]

    inbox = alice.get("/api/approvals").json()["approvals"]
    mine = next(a for a in inbox if a["run_id"] == run_id)
    assert mine["approval_id"] == p["approval_id"] and mine["tool"] == "apply_patch" and mine["can_decide"]
    view = alice.get(f"/api/runs/{run_id}/approvals/{p['approval_id']}").json()
    assert view["hash_matches"] and view["decision"] == "pending" and view["can_decide"]
    path = view["arguments"]["path"]
    assert view["diff"].startswith(f"--- a/{path}\n+++ b/{path}\n")
    assert "-" + view["arguments"]["old"].splitlines()[0] in view["diff"]

    # validation errors name the field; a wrong id says what is pending
    bad = alice.post(f"/api/runs/{run_id}/approvals/{p['approval_id']}/reject", json={})
    assert bad.status_code == 422 and "body.reason" in bad.json()["error"]
    assert bad.json()["fields"][0]["field"] == "body.reason"
    unknown = alice.get("/api/runs/run-nope")
    assert unknown.status_code == 404 and "GET /api/runs lists them" in unknown.json()["error"]
    wrong = alice.post(f"/api/runs/{run_id}/approvals/apr-0000/approve", json={})
    assert wrong.status_code == 404 and "shows the pending one" in wrong.json()["error"]

    done = alice.post(f"/api/runs/{run_id}/approvals/{p['approval_id']}/approve", json={})
    assert done.status_code == 200, done.text
    assert done.json()["by"] == "alice"
    assert cli("watch", run_id).returncode == 0
    granted = next(e for e in audit_events(cli, run_id) if e["kind"] == "approval_granted")
    assert granted["approver"] == "alice" and granted["proof"]["key_id"] == key_id  # the console key signed it
    verified = cli("audit", run_id, "--verify")
    assert verified.returncode == 0, verified.stdout + verified.stderr

    audit = alice.get(f"/api/runs/{run_id}/audit").json()
    assert audit["chain"]["ok"] and audit["decisions_ok"]
    assert [(d["kind"], d["key_id"], d["verified"]) for d in audit["decisions"]] == [("approval_granted", key_id, True)]
    run = alice.get(f"/api/runs/{run_id}").json()
    assert run["status"] == "completed" and run["cost_usd"] == 0.0 and run["tokens"] > 0
    assert run["approvals"][0]["approved_by"] == "alice" and run["approvals"][0]["key_id"] == key_id
    assert run["context"]["points"] and run["objective"]
    art = run["artifacts"][0]
    assert alice.get(f"/api/runs/{run_id}/artifacts/{art['sha256']}").status_code == 200
    assert alice.get(f"/api/runs/{run_id}/artifacts/{'0' * 64}").status_code == 404

    # the timeline pages through the whole audit log, in order
    seqs, after = [], 0
    while True:
        page = alice.get(f"/api/runs/{run_id}/timeline", params={"after": after, "limit": 7}).json()
        seqs += [i["seq"] for i in page["items"]]
        after = page["next_after"]
        if not page["more"]:
            break
    assert seqs == list(range(1, run["audit_events"] + 1))

    # the event stream replays a finished run's log from an id on, then says it ended
    with alice.stream("GET", f"/api/runs/{run_id}/events", headers={"Last-Event-ID": "3"}) as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        events, ids = [], []
        for line in r.iter_lines():
            if line.startswith("id:"):
                ids.append(int(line[3:]))
            if line.startswith("event:"):
                events.append(line[6:].strip())
            if events and events[-1] == "end":
                break
    assert ids == list(range(4, run["audit_events"] + 1)) and events[-1] == "end"


def test_a_new_console_password_revokes_the_old_key(cli: Cli, console: Console) -> None:
    # vic is this test's own: the other console users' passwords stay as every console test knows them
    import subprocess

    from tests.support.cli_stack import LONGRUN

    def set_password(password: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([LONGRUN, "approvers", "add", "vic", "--console", "--password-stdin", "--role", "viewer"],
                              input=password + "\n", env=cli.env, capture_output=True, text=True, timeout=60)

    first = set_password("vic-first-password-7")
    assert first.returncode == 0, first.stderr
    old = console.session("vic", "vic-first-password-7")
    assert old.get("/api/me").status_code == 200
    changed = set_password("vic-new-password-9")
    assert changed.returncode == 0, changed.stderr
    assert "the old password no longer signs in" in changed.stdout
    assert old.get("/api/me").status_code == 401  # the session's key is revoked with it
    refused = httpx.post(console.url + "/api/session", json={"name": "vic", "password": "vic-first-password-7"})
    assert refused.status_code == 401
    assert console.session("vic", "vic-new-password-9").get("/api/me").json()["principal"] == "vic"
    short = set_password("short")
    assert short.returncode == 2 and "at least 12 characters" in short.stderr
