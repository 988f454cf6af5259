"""The console against abuse (issue 24, findings 7 and 10-14), over real HTTP against `longrun
serve` in its own process, a real dev stack, worker and run:

- a session row written with the app role (what a compromised worker can do) signs no one in;
- a request body over the cap is refused before it is read; sign-in floods get 429, per client
  address, per (address, name) and globally, and concurrent wrong passwords cannot outrun the
  throttle; a flood from one address does not lock the name out from another;
- a stream opened with a made-up `Last-Event-ID` does not silence other viewers of the run;
- a refused decision with a made-up approval id writes nothing into the run's audit, and audited
  refusals per person are bounded;
- error pages carry their status.

Different tests sign in from different loopback addresses (Linux routes all of 127/8 to `lo`), so
one test's flood does not throttle another's, and none trusts a forwarded-for header.
"""

from __future__ import annotations

import json
import secrets
import socket
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import psycopg
import pytest

from longrun.auth.sealed import token_sha256
from longrun.store import libpq_url, sqlalchemy_url
from tests.support.cli_stack import Cli, cli_stack
from tests.support.console_server import PASSWORDS, Console, add_console_users, serve

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cli() -> Iterator[Cli]:
    """A stack of this module's own, not the process's shared one: the sign-in floods here are
    counted in PostgreSQL per address and over the whole console for 5 minutes, and would refuse
    the sign-ins of the console tests that run next on a shared one."""
    with cli_stack() as stack:
        yield stack


@pytest.fixture(scope="module")
def console(cli: Cli) -> Iterator[Console]:
    add_console_users(cli)
    with serve(cli) as c:
        yield c


def app_db(cli: Cli) -> psycopg.Connection:
    """A connection with the app role's URL: what a worker holds."""
    url = json.loads((cli.home / "stack.json").read_text())["database_url"]
    return psycopg.connect(libpq_url(sqlalchemy_url(url)), autocommit=True)


def client_from(console: Console, address: str, **kwargs: object) -> httpx.Client:
    """A client whose connections leave from `address` (any 127.x.y.z on Linux)."""
    return console.client(transport=httpx.HTTPTransport(local_address=address), **kwargs)


def audit_rows(cli: Cli, run_id: str) -> list[dict]:
    return [r["data"]["event"] | {"actor": r["data"]["actor"]}
            for r in cli.json("audit", run_id)["timeline"] if r["source"] == "audit"]


@pytest.mark.timeout(900)  # the first test pays for the module's stack and console on a loaded machine
def test_a_session_row_written_with_the_app_role_signs_no_one_in(cli: Cli, console: Console) -> None:
    alice = console.session("alice")
    key_id = alice.get("/api/me").json()["key_id"]
    token = secrets.token_urlsafe(32)
    now = datetime.now(UTC)
    with app_db(cli) as db:  # finding 7: the app role may write console_sessions
        db.execute("INSERT INTO console_sessions (token_sha256, principal, key_id, nonce, sealed_key, created_at, "
                   "expires_at) VALUES (%s, 'alice', %s, %s, %s, %s, %s)",
                   (token_sha256(token), key_id, secrets.token_bytes(12), secrets.token_bytes(48), now,
                    now + timedelta(hours=1)))
    minted = console.client(cookies={"longrun_session": token})
    me = minted.get("/api/me")
    assert me.status_code == 401, me.text
    assert "sign in again" in me.json()["error"]

    # nor does a real session whose expiry the app role moved
    real = alice.cookies.get("longrun_session")
    with app_db(cli) as db:
        db.execute("UPDATE console_sessions SET expires_at = expires_at + interval '30 days' WHERE token_sha256 = %s",
                   (token_sha256(real),))
    assert alice.get("/api/me").status_code == 401

    # a session the console made works here and in a second console process sharing LONGRUN_HOME
    otto = console.session("otto")
    assert otto.get("/api/me").json()["principal"] == "otto"
    with serve(cli) as other:
        shared = other.client(cookies={"longrun_session": otto.cookies.get("longrun_session")})
        assert shared.get("/api/me").json()["principal"] == "otto"


def _raw_post(url: str, head: bytes, body_parts: Iterator[bytes]) -> bytes:
    """Send a request by hand (headers, then body parts until the server answers or the parts
    run out) and return what the server answered."""
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=20) as sock:
        sock.sendall(head)
        for part in body_parts:
            try:
                sock.sendall(part)
            except OSError:  # the server answered and closed: read what it said
                break
        answer = b""
        while b"\r\n\r\n" not in answer:
            chunk = sock.recv(65536)
            if not chunk:
                break
            answer += chunk
        return answer


def test_a_body_over_the_cap_is_refused_before_it_is_read(console: Console) -> None:
    host = urlsplit(console.url).netloc
    declared = (f"POST /api/session HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {400 * 2**20}\r\n\r\n").encode()
    answer = _raw_post(console.url, declared, iter([b"{" + b" " * 1023]))  # 1 KiB of the 400 MiB declared
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]

    chunked = (f"POST /api/session HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
               "Transfer-Encoding: chunked\r\n\r\n").encode()
    piece = b" " * 65536
    chunks = (f"{len(piece):x}\r\n".encode() + piece + b"\r\n" for _ in range(64))  # 4 MiB, never ended
    answer = _raw_post(console.url, chunked, chunks)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert httpx.get(console.url + "/healthz").json() == {"status": "ok"}  # the server stays up


def test_a_sign_in_flood_from_one_address_is_throttled(console: Console) -> None:
    flood = client_from(console, "127.0.0.3")
    statuses = []
    for i in range(30):  # made-up names: no per-name throttle applies
        r = flood.post("/api/session", json={"name": f"nobody{i}", "password": "whatever-it-is"})
        statuses.append(r.status_code)
        if r.status_code == 429:
            assert "wait" in r.json()["error"] and int(r.headers["retry-after"]) > 0, r.text
    assert 429 in statuses, statuses
    first = statuses.index(429)
    assert set(statuses[:first]) == {401} and set(statuses[first:]) == {429}, statuses
    # another address still signs in
    assert client_from(console, "127.0.0.13").post(
        "/api/session", json={"name": "alice", "password": PASSWORDS["alice"]}).status_code == 200


def test_concurrent_wrong_passwords_cannot_outrun_the_throttle(cli: Cli, console: Console) -> None:
    statuses: list[int] = []
    barrier = threading.Barrier(24)

    def attempt() -> None:
        with httpx.Client(base_url=console.url, timeout=60,
                          transport=httpx.HTTPTransport(local_address="127.0.0.4")) as c:
            barrier.wait()
            statuses.append(c.post("/api/session", json={"name": "alice", "password": "not-her-password"}).status_code)

    threads = [threading.Thread(target=attempt) for _ in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(set(statuses)) == [401, 429], statuses
    assert statuses.count(401) <= 5, statuses  # a 401 is a password tried; a 429 tried none
    with app_db(cli) as db:  # each attempt is recorded before its key derivation
        tried = db.execute("SELECT count(*) FROM console_sign_ins WHERE client = '127.0.0.4' "
                           "AND principal = 'alice'").fetchone()
    assert tried is not None and tried[0] == statuses.count(401)


def test_a_flood_from_one_address_does_not_lock_a_name_out_elsewhere(console: Console) -> None:
    attacker = client_from(console, "127.0.0.5")
    for _ in range(8):
        last = attacker.post("/api/session", json={"name": "alice", "password": "not-her-password"})
    assert last.status_code == 429, last.text
    elsewhere = client_from(console, "127.0.0.6")
    r = elsewhere.post("/api/session", json={"name": "alice", "password": PASSWORDS["alice"]})
    assert r.status_code == 200, r.text
    form = client_from(console, "127.0.0.5").post("/login", data={"name": "alice", "password": "nope-nope-nope"})
    assert form.status_code == 429 and "wait" in form.text  # the sign-in page says it too


def _next_event(lines: Iterator[str]) -> dict:
    for line in lines:
        if line.startswith("data:"):
            return dict(json.loads(line[5:]))
    raise AssertionError("the stream ended")


def test_a_made_up_last_event_id_does_not_silence_other_viewers(cli: Cli, console: Console, workspace: Path) -> None:
    run_id, status = cli.start_and_wait(workspace)
    approval_id = status["pending_approval"]["approval_id"]
    vera = console.session("vera")
    viewer_a = console.session("vera")
    events = f"/api/runs/{run_id}/events"
    with vera.stream("GET", events, headers={"Last-Event-ID": "999999999"}) as b:
        assert b.status_code == 200
        threading.Event().wait(1.0)  # let b's subscription settle first (it used to move the shared cursor)
        with viewer_a.stream("GET", events, timeout=httpx.Timeout(30, read=10)) as a:
            lines = a.iter_lines()
            backlog = len(audit_rows(cli, run_id))
            seen = [_next_event(lines)["seq"] for _ in range(backlog)]
            assert seen == list(range(1, backlog + 1))
            refused = console.session("vera").post(f"/api/runs/{run_id}/approvals/{approval_id}/approve", json={})
            assert refused.status_code == 403  # audited: a new event of the run
            new = _next_event(lines)  # before the fix: nothing came, and the read timed out
            assert new["seq"] == backlog + 1 and new["kind"] == "approval_refused", new
    assert cli("cancel", run_id).returncode == 0


def test_a_made_up_approval_id_writes_nothing_into_the_audit(cli: Cli, console: Console, workspace: Path) -> None:
    run_id, status = cli.start_and_wait(workspace)
    approval_id = status["pending_approval"]["approval_id"]
    vera = console.session("vera")
    before = len(audit_rows(cli, run_id))
    forged = "apr-0000 GRANTED by alice (signed, verified) " + "x" * 3_000
    for _ in range(5):
        r = vera.post(f"/api/runs/{run_id}/approvals/{forged}/approve", json={})
        assert r.status_code == 404, r.text
        assert "GET /api/runs/" in r.json()["error"] and len(r.json()["error"]) < 400
        r = vera.post(f"/api/runs/{run_id}/approvals/{forged}/reject", json={"reason": "no"})
        assert r.status_code == 404, r.text
    assert len(audit_rows(cli, run_id)) == before
    assert "GRANTED" not in json.dumps(audit_rows(cli, run_id))

    # refusals on the real approval are audited, but not without end
    for _ in range(30):
        assert vera.post(f"/api/runs/{run_id}/approvals/{approval_id}/approve", json={}).status_code == 403
        assert vera.post(f"/api/runs/{run_id}/pause").status_code == 403
    added = audit_rows(cli, run_id)[before:]
    assert 1 <= len(added) <= 10, [e["kind"] for e in added]
    assert {e["kind"] for e in added} <= {"approval_refused", "operator_request"}
    assert cli("cancel", run_id).returncode == 0


def test_error_pages_carry_their_status(console: Console) -> None:
    vera = console.session("vera")
    missing = vera.get("/runs/run-doesnotexist")
    assert missing.status_code == 404 and "no run" in missing.text
    assert vera.get("/runs/run-doesnotexist/audit").status_code == 404
    assert vera.get("/runs/run-doesnotexist/context.svg").status_code == 404
    assert vera.get("/nowhere").status_code == 404
    assert vera.get("/api/runs/run-doesnotexist/approvals/apr-nope").status_code == 404
    assert vera.get("/runs", params={"status": "x" * 10}).status_code == 200
