"""`POST /api/runs` over real HTTP (`longrun serve` in its own process) against a real dev stack
and worker: an operator starts a run with the scripted model and it shows up in `longrun runs`
and `status`, audited under their name; the Idempotency-Key makes a retry, and concurrent twins,
get one run; another body under a used key is refused; refusals say what to do and are audited
in `run_requests`."""

from __future__ import annotations

import json
import shlex
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from longrun.client.start_request import StartRequest
from longrun.console.starts import request_sha256
from longrun.store import Store
from tests.support.cli_stack import OBJECTIVE, TEST_ARGV, Cli
from tests.support.console_server import Console

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


@pytest.fixture
def store(cli: Cli) -> Iterator[Store]:
    url = json.loads((cli.home / "stack.json").read_text())["database_url"]
    with Store.from_url(url) as s:
        yield s


def body(workspace: Path, objective: str) -> dict:
    return {"objective": objective, "workspace": str(workspace), "approvers": ["alice"],
            "constraints": [f"tests: {shlex.join(TEST_ARGV)}"], "allow_commands": [shlex.join(TEST_ARGV)]}


def runs_with(cli: Cli, objective: str) -> list[str]:
    return [r["run_id"] for r in cli.json("runs", "--limit", "500") if r["objective"] == objective]


def wait_for_human(cli: Cli, run_id: str) -> dict:
    while True:  # bounded by the test's timeout
        status = cli.json("status", run_id)
        if status["status"] in ("waiting_approval", "paused", "completed", "failed"):
            return status
        time.sleep(0.5)


def test_an_operator_starts_a_run_and_a_retry_gets_the_same_run(cli: Cli, console: Console, workspace: Path) -> None:
    otto = console.session("otto")
    objective = f"{OBJECTIVE} ({uuid.uuid4().hex})"
    key = str(uuid.uuid4())
    first = otto.post("/api/runs", json=body(workspace, objective), headers={"Idempotency-Key": key})
    assert first.status_code == 201, first.text
    run_id = first.json()["run_id"]
    assert first.json()["created"] is True and first.json()["by"] == "otto"

    status = wait_for_human(cli, run_id)  # the worker runs it with the scripted model, like `longrun start`
    assert status["status"] == "waiting_approval", status
    assert status["approvers"] == ["alice"] and status["objective"] == objective
    assert runs_with(cli, objective) == [run_id]
    started = [r["data"] for r in cli.json("audit", run_id)["timeline"]
               if r["source"] == "audit" and r["data"]["event"]["kind"] == "run_started"]
    assert [s["actor"] for s in started] == ["human:otto"]

    again = otto.post("/api/runs", json=body(workspace, objective), headers={"Idempotency-Key": key})
    assert again.status_code == 200, again.text
    assert again.json()["run_id"] == run_id and again.json()["created"] is False
    reordered = dict(reversed(list(body(workspace, objective).items())))  # the same request, spelled otherwise
    assert otto.post("/api/runs", content=json.dumps(reordered), headers={
        "Idempotency-Key": key, "Content-Type": "application/json"}).json()["run_id"] == run_id

    other = otto.post("/api/runs", json=body(workspace, objective + " and more"), headers={"Idempotency-Key": key})
    assert other.status_code == 409, other.text
    assert "send a new key" in other.json()["error"] and run_id in other.json()["error"]
    assert runs_with(cli, objective) == [run_id] and runs_with(cli, objective + " and more") == []
    assert cli.json("status", run_id)["status"] == "waiting_approval"  # the retries changed nothing
    assert cli("cancel", run_id).returncode == 0
    while cli.json("status", run_id)["status"] != "cancelled":  # bounded by the test's timeout
        time.sleep(0.5)
    late = otto.post("/api/runs", json=body(workspace, objective), headers={"Idempotency-Key": key})
    assert (late.status_code, late.json()["run_id"]) == (200, run_id)  # a retry after the end starts nothing
    assert cli.json("status", run_id)["status"] == "cancelled" and runs_with(cli, objective) == [run_id]


def test_a_retry_heals_a_console_that_died_between_the_claim_and_the_start(
        cli: Cli, console: Console, workspace: Path, store: Store) -> None:
    objective = f"{OBJECTIVE} ({uuid.uuid4().hex})"
    key = str(uuid.uuid4())
    payload = body(workspace, objective)
    claimed = "run-" + uuid.uuid4().hex[:12]  # what a console that died right after its claim left behind
    store.claim_run_request("otto", key, request_sha256(StartRequest(**payload)), claimed)
    assert runs_with(cli, objective) == []
    retry = console.session("otto").post("/api/runs", json=payload, headers={"Idempotency-Key": key})
    assert (retry.status_code, retry.json()["run_id"]) == (200, claimed), retry.text
    assert wait_for_human(cli, claimed)["status"] == "waiting_approval"
    assert runs_with(cli, objective) == [claimed]
    assert cli("cancel", claimed).returncode == 0


def test_concurrent_requests_with_one_key_start_one_run(cli: Cli, console: Console, workspace: Path) -> None:
    otto = console.session("otto")
    objective = f"{OBJECTIVE} ({uuid.uuid4().hex})"
    key = str(uuid.uuid4())

    def post(_: int) -> tuple[int, str]:
        r = otto.post("/api/runs", json=body(workspace, objective), headers={"Idempotency-Key": key})
        return r.status_code, r.json().get("run_id", r.text)

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(post, range(8)))
    assert len({run_id for _, run_id in answers}) == 1, answers
    assert sorted(code for code, _ in answers) == [200] * 7 + [201], answers
    run_id = answers[0][1]
    assert runs_with(cli, objective) == [run_id]
    assert wait_for_human(cli, run_id)["status"] == "waiting_approval"
    assert cli("cancel", run_id).returncode == 0


def test_refusals_say_what_to_do_and_are_audited(cli: Cli, console: Console, workspace: Path, store: Store) -> None:
    objective = f"{OBJECTIVE} ({uuid.uuid4().hex})"
    good = body(workspace, objective)
    cases = [
        ("vera", good, {"Idempotency-Key": "k-1"}, 403, "longrun approvers add vera --role operator"),
        ("alice", good, {"Idempotency-Key": "k-1"}, 403, "not operator"),
        ("otto", good, {}, 422, "send an Idempotency-Key header"),
        ("otto", good | {"constraints": ["x" * 30_000] * 3}, {"Idempotency-Key": "k-2"}, 413, "send less"),
        ("otto", good | {"workspace": str(workspace / "missing")}, {"Idempotency-Key": "k-3"}, 422,
         "pass an existing folder"),
        ("otto", good | {"approvers": ["nobody"]}, {"Idempotency-Key": "k-4"}, 422, "`longrun approvers add nobody`"),
        ("otto", good | {"model": "scripted", "base_url": "http://x/v1"}, {"Idempotency-Key": "k-5"}, 422,
         "base_url and context_window are for openai-compatible"),
        ("otto", good | {"colour": "red"}, {"Idempotency-Key": "k-6"}, 422, "colour"),
    ]
    for name, payload, headers, code, says in cases:
        r = console.session(name).post("/api/runs", json=payload, headers=headers)
        assert r.status_code == code, (name, payload.keys(), r.text)
        assert says in r.json()["error"], r.text
    assert runs_with(cli, objective) == []  # nothing started
    refused = {(r.principal, r.reason.split(":", 1)[0]) for r in store.run_requests() if r.outcome == "refused"}
    assert {("vera", "403"), ("alice", "403"), ("otto", "413"), ("otto", "422")} <= refused
    assert not [r for r in store.run_requests("otto") if r.idempotency_key in {"k-2", "k-3", "k-4", "k-5", "k-6"}], \
        "a refused request spends no key"
    fixed = console.session("otto").post("/api/runs", json=good, headers={"Idempotency-Key": "k-4"})
    assert fixed.status_code == 201, fixed.text  # the key of a refused request still starts the corrected one
    assert cli("cancel", fixed.json()["run_id"]).returncode == 0

    anonymous = console.client().post("/api/runs", json=good, headers={"Idempotency-Key": "k-7"})
    assert anonymous.status_code == 401 and "sign in" in anonymous.json()["error"]
    no_csrf = console.session("otto")
    del no_csrf.headers["X-CSRF-Token"]
    assert no_csrf.post("/api/runs", json=good, headers={"Idempotency-Key": "k-8"}).status_code == 403


def test_the_openapi_description_has_it(console: Console) -> None:
    described = console.client().get("/api/openapi.json").json()["paths"]["/api/runs"]["post"]
    fields = described["requestBody"]["content"]["application/json"]["schema"]["properties"]
    assert {"objective", "workspace", "approvers", "allow_commands", "model", "in_place"} <= set(fields)
    assert "Idempotency-Key" in [p["name"] for p in described["parameters"]]
    assert {"201", "200", "409", "413", "422"} <= set(described["responses"])
