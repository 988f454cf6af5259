"""Notifications: a run tells its webhooks when it needs an approval, waits for a human and ends;
each body is signed (HMAC-SHA256, `X-Longrun-Signature`), carries Slack's `text` and the exact
command that answers it, and every attempt is in the run's audit. A webhook that fails is retried
with backoff while the run goes on; one that refuses is given up on, and the run still completes.
Neither the webhook's URL (a credential: a Slack incoming-webhook's path is its token) nor its
secret reaches the workflow's history, the audit, the transcript or a log.

Whole runs: real Postgres, the real Temporal dev server, the worker in-process with a faster
retry schedule (`tests/support/notify_workflow.py`), a local receiver on the standard library's
HTTP server (`tests/support/webhook_receiver.py`).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import secrets
import socket
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from longrun.cli import build_parser, main
from longrun.cli.commands.start import build_spec
from longrun.client import calls as client_calls
from longrun.client import decide
from longrun.client import runs as client_runs
from longrun.errors import ConfigError
from longrun.models.spec import RunSpec
from longrun.service.settings import Settings
from longrun.service.worker import build_worker
from longrun.tools import default_registry
from longrun.webhooks import WebhookDirectory, sign, verify_signature
from longrun.webhooks.transport import Answer, scrub
from longrun.workflows.agent_run import AgentRunWorkflow
from tests.support.harness import Harness
from tests.support.notify_workflow import FastNotifyWorkflow
from tests.support.policy import PlanProvider
from tests.support.webhook_receiver import WebhookReceiver, always, fail_first_delivery
from tests.test_replay import decoded_history

ASK_THEN_EDIT = [
    [("set_next_action", {"next_action": "ask_human"})],
    [("set_next_action", {"next_action": "edit"})],
    [("apply_patch", {"path": "hello.txt", "old": "helo", "new": "hello"})],
]


@asynccontextmanager
async def notify_worker(client, store, provider) -> AsyncIterator[Harness]:
    """An in-process worker running `FastNotifyWorkflow`, its webhooks read from the environment
    as it is now (set them first)."""
    task_queue = f"tq-{uuid.uuid4().hex[:10]}"
    worker = build_worker(
        client, store, settings=Settings.from_env(), registry=default_registry(), provider_for=lambda _m: provider,
        task_queue=task_queue, heartbeat_every=0.5, workflows=(FastNotifyWorkflow,),
    )
    async with worker:
        yield Harness(client, store, task_queue)


def workspace(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "hello.txt").write_text("helo world\n")
    return ws


def spec(ws, webhooks: list[str]) -> RunSpec:
    return RunSpec(objective="Fix the greeting.", workspace=str(ws), approvers=["alice"], webhooks=webhooks)


def audit_events(store, run_id: str, kind: str) -> list[tuple[int, dict[str, Any]]]:
    return [(r.seq, r.event.model_dump(mode="json")) for r in store.audit(run_id) if r.kind == kind]


def set_webhook(monkeypatch, name: str, url: str, secret: str | None = None) -> None:
    monkeypatch.setenv(f"LONGRUN_WEBHOOK_{name.upper()}_URL", url)
    if secret is not None:
        monkeypatch.setenv(f"LONGRUN_WEBHOOK_{name.upper()}_SECRET", secret)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ------------------------------------------------------------------ the parts, without a run


def test_start_names_webhooks_and_a_bad_name_changes_nothing(tmp_path, capsys) -> None:
    args = build_parser().parse_args(
        ["start", "--objective", "x", "--workspace", str(tmp_path), "--webhook", "Ops", "--webhook", "slack",
         "--webhook", "ops"])
    assert build_spec(args).webhooks == ["ops", "slack"], "names are lower-cased, once each"
    assert main(["start", "--objective", "x", "--workspace", str(tmp_path), "--webhook", "no-dashes"]) == 2
    assert "webhook name 'no-dashes'" in capsys.readouterr().err


def test_the_worker_reads_each_webhook_from_its_environment() -> None:
    env = {"LONGRUN_WEBHOOK_OPS_URL": "https://hooks.example.com:8443/services/T0/B0/tok3n?x=1",
           "LONGRUN_WEBHOOK_OPS_SECRET": "s3cret", "LONGRUN_WEBHOOK_BAD_URL": "ftp://example.com/x",
           "LONGRUN_WEBHOOKS": "Team, ops"}
    hooks = WebhookDirectory.from_env(env)
    ops = hooks.get("ops")
    assert (ops.url, ops.secret, ops.target) == (env["LONGRUN_WEBHOOK_OPS_URL"], "s3cret", "https://hooks.example.com:8443")
    assert "tok3n" not in repr(ops) and "s3cret" not in repr(ops) and "tok3n" not in repr(hooks)
    assert hooks.for_run(["ops", "pager"], subagent=False) == ["ops", "pager", "team"]
    assert hooks.for_run([], subagent=True) == [], "subagents notify nobody by default"
    with pytest.raises(ConfigError, match="LONGRUN_WEBHOOK_PAGER_URL"):
        hooks.get("pager")
    with pytest.raises(ConfigError, match="not an http") as bad:
        hooks.get("bad")
    assert "example.com" not in str(bad.value), "an error names the variable, never its value"
    with pytest.raises(ConfigError, match="LONGRUN_WEBHOOKS"):
        WebhookDirectory.from_env({"LONGRUN_WEBHOOKS": "ok,not ok"})


def test_signature_is_over_the_timestamp_and_the_exact_body() -> None:
    body = b'{"text":"hi"}'
    header = sign(body, "k", 1_700_000_000)
    digest = hmac.new(b"k", b"1700000000." + body, hashlib.sha256).hexdigest()
    assert header == f"t=1700000000,v1={digest}"
    assert verify_signature(body, header, "k", now=1_700_000_100)
    assert not verify_signature(body, header, "k", now=1_700_000_301), "older than 5 minutes: a replay"
    assert not verify_signature(body, header.replace("t=1700000000", "t=1700000001"), "k", now=1_700_000_000)
    assert not verify_signature(b'{"text":"hi!"}', header, "k", now=1_700_000_000)
    assert not verify_signature(body, "v1=" + digest, "k", now=1_700_000_000)
    assert verify_signature(body, f"t=1700000000,v1={'0' * 64},v1={digest}", "k", now=1_700_000_000), "rotation"


@pytest.mark.parametrize(("status", "delivered", "permanent"), [
    (200, True, False), (204, True, False), (301, False, True), (400, False, True), (404, False, True),
    (408, False, False), (429, False, False), (500, False, False), (503, False, False), (None, False, False)])
def test_which_answers_are_retried(status, delivered, permanent) -> None:
    answer = Answer(status=status, error=None if status else "ConnectionRefusedError: refused")
    assert (answer.delivered, answer.permanent) == (delivered, permanent)


def test_an_error_text_never_holds_the_url() -> None:
    url = "https://hooks.slack.com/services/T0/B0/tok3n"
    text = scrub(f"no such hook {url} (path /services/T0/B0/tok3n), key s3cret", url, "s3cret")
    assert "tok3n" not in text and "s3cret" not in text and "[redacted]" in text


# ------------------------------------------------------------------ whole runs


@pytest.mark.slow
async def test_a_failing_webhook_is_retried_while_the_run_goes_on(store, temporal_client, tmp_path, monkeypatch):
    secret = "whsec-" + secrets.token_hex(16)
    # 503 and Retry-After: 4 twice: the third attempt comes 8 s after the first, the run goes on meanwhile
    with WebhookReceiver(fail_first_delivery(times=2, status=503, retry_after=4)) as rx:
        set_webhook(monkeypatch, "ops", rx.url("/hooks/ops"), secret)
        async with notify_worker(temporal_client, store, PlanProvider(plan=ASK_THEN_EDIT)) as h:
            run_id = await h.start(spec(workspace(tmp_path), ["ops"]))
            await h.wait_for(run_id, lambda s: s.status == "paused" and s.state.next_action == "ask_human",
                             what="the run to ask a human")
            await client_runs.say(h.client, h.store, run_id, "the typo is real: fix it")
            waiting = await h.wait_for(run_id, lambda s: s.status == "waiting_approval", what="a pending approval")
            approval_id = waiting.pending_approval.approval_id
            await client_calls.control(h.client, run_id, "cancel")
            result = await h.result(run_id)
            history = await h.client.get_workflow_handle(run_id).fetch_history()
    assert result.status == "cancelled"

    # the first event: refused twice (HTTP 503), accepted at the third attempt, one delivery id throughout
    asks = rx.of("ask_human")
    assert [r.status for r in asks] == [503, 503, 200]
    assert len({r.delivery for r in asks}) == 1 and asks[0].path == "/hooks/ops"
    assert asks[1].at - asks[0].at >= 3.5 and asks[2].at - asks[1].at >= 3.5, "Retry-After: 4 was honoured"
    attempts = [e for _, e in audit_events(store, run_id, "notification_attempt") if e["event"] == "ask_human"]
    assert [(e["attempt"], e["status"], e["outcome"], e["retry_after"]) for e in attempts] == [
        (1, 503, "transient", 4.0), (2, 503, "transient", 4.0), (3, 200, "delivered", None)]
    assert {e["webhook"] for e in attempts} == {"ops"} and {e["target"] for e in attempts} == {rx.url("")}
    delivered = {e["event"]: (seq, e) for seq, e in audit_events(store, run_id, "notification_delivered")}
    assert delivered["ask_human"][1]["attempts"] == 3

    # meanwhile the run went on: its approval request is in the audit before that delivery succeeded
    (requested_seq, _), = audit_events(store, run_id, "approval_requested")
    assert requested_seq < delivered["ask_human"][0], "the run waited for the webhook"
    assert asks[0].at < rx.of("approval_requested")[0].at < asks[-1].at

    # every body is signed with the secret, over its exact bytes; a changed byte or secret fails
    for r in rx.requests:
        header = r.headers["X-Longrun-Signature"]
        assert header.startswith("t=") and ",v1=" in header
        assert verify_signature(r.body, header, secret), f"bad signature on {r.event} attempt {r.attempt}"
        assert not verify_signature(r.body + b" ", header, secret)
        assert not verify_signature(r.body, header, secret + "x")

    # Slack's `text`, and the exact command that answers each event
    ask = asks[-1].json
    assert ask["text"].startswith(f"*longrun* run `{run_id}` waits for a human")
    assert ask["command"] == f'longrun say {run_id} "..."' and ask["command"] in ask["text"]
    apr = rx.of("approval_requested")[-1].json
    assert apr["command"] == f"longrun approve {run_id} {approval_id} --as alice"
    assert apr["command"] in apr["text"] and apr["commands"]["reject"] in apr["text"]
    assert apr["tool"] == "apply_patch" and apr["approval_id"] == approval_id and apr["approvers"] == ["alice"]
    end = rx.of("run_finished")[-1].json
    assert end["status"] == "cancelled" and end["command"] == f"longrun status {run_id}"
    assert f"longrun status {run_id}" in end["text"]
    assert {r.event for r in rx.requests} == {"ask_human", "approval_requested", "run_finished"}
    assert store.verify_chain(run_id).ok
    await Replayer(workflows=[AgentRunWorkflow], data_converter=pydantic_data_converter).replay_workflow(history)


@pytest.mark.slow
async def test_a_delivery_in_flight_at_continue_as_new_goes_on_in_the_next_run(
    store, temporal_client, tmp_path, monkeypatch
):
    plan = [[("set_next_action", {"next_action": "ask_human"})], [("write_note", {"text": "told to go on"})]]
    with WebhookReceiver(fail_first_delivery(times=2, status=503)) as rx:
        set_webhook(monkeypatch, "ops", rx.url("/hooks/ops"), "whsec-can")
        async with notify_worker(temporal_client, store, PlanProvider(plan=plan)) as h:
            run_id = await h.start(spec(workspace(tmp_path), ["ops"]).model_copy(update={"continue_as_new_every": 2}))
            await h.wait_for(run_id, lambda s: s.status == "paused", what="the run to ask a human")
            await client_runs.say(h.client, h.store, run_id, "go on")  # turn 2, then continue-as-new
            result = await h.result(run_id)
            history = await h.client.get_workflow_handle(run_id).fetch_history()
    assert result.status == "completed", result.reason
    first = history.events[0].workflow_execution_started_event_attributes
    assert first.continued_execution_run_id, "the run continued as new"
    carried = decoded_history(history)
    assert '"notifications":[{' in carried.replace(" ", ""), "the next run was handed the delivery in flight"

    asks = rx.of("ask_human")
    assert len({r.delivery for r in asks}) == 1, "one delivery id across both runs of the workflow"
    assert [r.status for r in asks] == [503, 503, 200]
    delivered = [e for _, e in audit_events(store, run_id, "notification_delivered") if e["event"] == "ask_human"]
    assert len(delivered) == 1
    assert [e["event"] for _, e in audit_events(store, run_id, "notification_failed")] == []
    assert [r.event for r in rx.requests].count("run_finished") == 1
    await Replayer(workflows=[AgentRunWorkflow], data_converter=pydantic_data_converter).replay_workflow(history)


@pytest.mark.slow
async def test_a_refusing_webhook_is_given_up_on_and_the_run_completes(store, temporal_client, tmp_path, monkeypatch):
    plan = [[("write_note", {"text": "the greeting has a typo"})]]
    with WebhookReceiver(always(404)) as rx:
        set_webhook(monkeypatch, "ops", rx.url("/hooks/gone"), "whsec-x")
        async with notify_worker(temporal_client, store, PlanProvider(plan=plan)) as h:
            run_id = await h.start(spec(workspace(tmp_path), ["ops"]))
            result = await h.result(run_id)
    assert result.status == "completed", result.reason
    assert store.get_run(run_id).status == "completed"
    assert [(r.event, r.status) for r in rx.requests] == [("run_finished", 404)], "a 404 is not retried"
    (_, attempt), = audit_events(store, run_id, "notification_attempt")
    assert (attempt["attempt"], attempt["status"], attempt["outcome"]) == (1, 404, "permanent")
    (_, failed), = audit_events(store, run_id, "notification_failed")
    assert failed["webhook"] == "ops" and failed["event"] == "run_finished" and failed["attempts"] == 1
    assert "HTTP 404" in failed["reason"] and "not retried" in failed["reason"]
    assert audit_events(store, run_id, "notification_delivered") == []
    assert store.verify_chain(run_id).ok


@pytest.mark.slow
async def test_no_webhook_url_or_secret_leaves_the_worker(store, temporal_client, tmp_path, monkeypatch, caplog, capfd):
    caplog.set_level(logging.DEBUG)
    token = {name: secrets.token_urlsafe(18) for name in ("ops", "nope", "gone")}
    secret = {name: "whsec-" + secrets.token_hex(20) for name in token}
    plan = [[("set_next_action", {"next_action": "ask_human"})], [("write_note", {"text": "told to go on"})]]
    with WebhookReceiver({f"/services/T0/B0/{token['ops']}": always(200),
                          f"/hooks/{token['nope']}": always(404)}) as rx:
        set_webhook(monkeypatch, "ops", rx.url(f"/services/T0/B0/{token['ops']}"), secret["ops"])
        set_webhook(monkeypatch, "nope", rx.url(f"/hooks/{token['nope']}"), secret["nope"])
        set_webhook(monkeypatch, "gone", f"http://127.0.0.1:{closed_port()}/hooks/{token['gone']}", secret["gone"])
        monkeypatch.setenv("LONGRUN_WEBHOOKS", "gone")  # the worker's default, beside the spec's two
        async with notify_worker(temporal_client, store, PlanProvider(plan=plan)) as h:
            run_id = await h.start(spec(workspace(tmp_path), ["ops", "nope"]))
            await h.wait_for(run_id, lambda s: s.status == "paused", what="the run to ask a human")
            await client_runs.say(h.client, h.store, run_id, "go on")
            result = await h.result(run_id)
            history = decoded_history(await h.client.get_workflow_handle(run_id).fetch_history())
    assert result.status == "completed", result.reason
    out, err = capfd.readouterr()

    # the canaries did travel: each webhook was tried with its URL, and signed with its secret
    assert {(r.path, r.event) for r in rx.requests} >= {
        (f"/services/T0/B0/{token['ops']}", "ask_human"), (f"/services/T0/B0/{token['ops']}", "run_finished"),
        (f"/hooks/{token['nope']}", "ask_human"), (f"/hooks/{token['nope']}", "run_finished")}
    for r in rx.requests:
        name = "ops" if token["ops"] in r.path else "nope"
        assert verify_signature(r.body, r.headers["X-Longrun-Signature"], secret[name])
    events = [r.event.model_dump(mode="json") for r in store.audit(run_id)]
    tried = {(e["webhook"], e["outcome"]) for e in events if e["kind"] == "notification_attempt"}
    assert {("ops", "delivered"), ("nope", "permanent"), ("gone", "transient")} <= tried
    failed = {e["webhook"] for e in events if e["kind"] == "notification_failed"}
    assert failed == {"nope", "gone"}
    gone = [e for e in events if e["kind"] == "notification_attempt" and e["webhook"] == "gone"]
    assert len(gone) == 2 * 4 and "Connection" in gone[0]["error"], "a refused connection is retried 4 times"
    assert any("Completing activity as failed" in rec.getMessage() for rec in caplog.records), \
        "the worker logged the failed attempts (so the log check below has something to look at)"

    texts = {
        "workflow history": history,
        "audit": json.dumps(events),
        "transcript": json.dumps([e.message.model_dump(mode="json") for e in store.transcript(run_id)]),
        "state history": json.dumps([v.state.model_dump(mode="json") for v in store.state_history(run_id)]),
        "run spec": json.dumps(store.get_run(run_id).spec.model_dump(mode="json")),
        "logs": "\n".join(rec.getMessage() + (rec.exc_text or "") + str(rec.exc_info or "") for rec in caplog.records)
        + "\n".join(logging.Formatter().format(rec) for rec in caplog.records),
        "stdout": out,
        "stderr": err,
    }
    canaries = {**{f"{n} URL token": t for n, t in token.items()}, **{f"{n} secret": s for n, s in secret.items()}}
    leaks = [f"{what} in {where}" for where, text in texts.items() for what, value in canaries.items() if value in text]
    assert leaks == [], f"webhook credentials leaked: {leaks}"
    assert '"webhook":"ops"' in history.replace(" ", ""), "the history names the webhook (and nothing more of it)"


@pytest.mark.slow
async def test_a_decision_is_told_with_its_verdict(store, temporal_client, tmp_path, monkeypatch):
    plan = [*ASK_THEN_EDIT[1:], [("set_next_action", {"next_action": "stop"})]]
    with WebhookReceiver(always(200)) as rx:
        set_webhook(monkeypatch, "ops", rx.url("/hooks/ops"), "whsec-decided")
        async with notify_worker(temporal_client, store, PlanProvider(plan=plan)) as h:
            run_id = await h.start(spec(workspace(tmp_path), ["ops"]))
            waiting = await h.wait_for(run_id, lambda s: s.status == "waiting_approval", what="a pending approval")
            approval_id = waiting.pending_approval.approval_id
            await decide.reject(h.client, run_id, approval_id, "alice", "the typo is intended")
            result = await h.result(run_id)
    assert result.status == "completed", result.reason
    (decided,) = [r.json for r in rx.of("approval_decided")]
    assert (decided["approval_id"], decided["verdict"], decided["approver"], decided["reason"]) == (
        approval_id, "rejected", "alice", "the typo is intended")
    assert decided["tool"] == "apply_patch" and decided["command"] == f"longrun status {run_id}"
    assert f"`{approval_id}` for `apply_patch` rejected by alice: the typo is intended" in decided["text"]
    assert [r.event for r in rx.requests] == ["approval_requested", "approval_decided", "run_finished"]
