"""Budgets that hold (issue 28): `--max-cost` is checked before every model call from the ledger
in PostgreSQL; reaching it stops the run for a human (a `budget` request), answered by a signed
`raise-budget` (the run goes on) or a signed rejection (the run ends cleanly); an unsigned or
forged raise is refused and audited; a subagent's spend stops its parent. A real worker, the
Temporal dev server and Postgres, and a registered provider that carries its price table."""

from __future__ import annotations

import secrets
import uuid
from pathlib import Path
from typing import Any

import pytest

from longrun.auth import Signer, new_key
from longrun.client.budget_decide import decide_budget
from longrun.client.calls import update
from longrun.client.decide import approve
from longrun.errors import ApprovalError
from longrun.models.audit import ApprovalRefused, BudgetDecided, BudgetRequested, BudgetWarning, ModelCalled
from longrun.models.io import BudgetInput
from longrun.models.provider import Usage
from longrun.models.signed import BudgetRecord, Proof
from longrun.models.spec import RunCaps, RunSpec
from longrun.providers import ModelProvider, ProviderConfig
from longrun.providers.prices import Price, format_dollars
from longrun.service.settings import Settings
from longrun.service.worker import build_worker
from longrun.webhooks import verify_signature
from longrun.workflows.agent_run import AgentRunWorkflow
from tests.support.harness import Harness
from tests.support.notify_workflow import FastNotifyWorkflow
from tests.support.policy import PlanProvider
from tests.support.webhook_receiver import WebhookReceiver, always
from tests.test_run_subagents import FILES, FamilyProvider

pytestmark = pytest.mark.slow

PRICE = Price(input=100.0, output=100.0)
"""$100 per million tokens: a request of a few thousand tokens costs a few tenths of a dollar."""
PLAN = [[("read_file", {"path": "hello.txt"})], [("read_file", {"path": "hello.txt"})],
        [("set_next_action", {"next_action": "stop"})]]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    (path / "hello.txt").write_text("hello from the workspace\n")
    for name, text in FILES.items():
        (path / name).write_text(text)
    return path


def priced(make: Any) -> dict[str, ModelProvider]:
    return {"priced": ModelProvider(factory=lambda c: make(c), models={"v1": (200_000, 8_192)}, prices={"v1": PRICE})}


def plan_provider(config: ProviderConfig) -> PlanProvider:
    return PlanProvider(plan=PLAN, name=config.name, info=config.info)


def worker(temporal_client: Any, store: Any, providers: dict[str, ModelProvider]) -> tuple[Any, Harness]:
    queue = f"tq-{uuid.uuid4().hex[:10]}"
    w = build_worker(temporal_client, store, settings=Settings.from_env(), providers=providers, task_queue=queue,
                     heartbeat_every=0.5)
    return w, Harness(temporal_client, store, queue)


def spec(ws: Path, max_cost: float, **kw: Any) -> RunSpec:
    return RunSpec(objective="Read hello.txt twice, then stop.", workspace=str(ws), approvers=["alice"],
                   model="priced:v1", caps=RunCaps(max_cost=max_cost), in_place=True, **kw)


def events(store: Any, run_id: str, kind: type) -> list[Any]:
    return [r.event for r in store.audit(run_id) if isinstance(r.event, kind)]


async def waiting_for_budget(h: Harness, run_id: str) -> Any:
    return await h.wait_for(run_id, lambda s: s.pending_approval is not None and s.pending_approval.kind == "budget",
                            what="a budget request")


@pytest.mark.timeout(180)
async def test_a_run_reaches_max_cost_waits_gets_a_signed_raise_and_finishes(store, temporal_client, ws):
    w, h = worker(temporal_client, store, priced(plan_provider))
    async with w:
        run_id = await h.start(spec(ws, max_cost=0.01))
        status = await waiting_for_budget(h, run_id)
        assert status.status == "waiting_approval"
        spent = store.family_spend(run_id)
        assert spent.requests == 1 and float(spent.dollars) >= 0.01, "one request was allowed, then the budget held"
        asked = events(store, run_id, BudgetRequested)
        assert len(asked) == 1 and asked[0].limit_usd == pytest.approx(0.01)
        assert asked[0].request_id == status.pending_approval.approval_id
        with pytest.raises(ApprovalError, match="raise-budget"):  # an approval does not answer a budget request
            await approve(temporal_client, run_id, status.pending_approval.approval_id, "alice", store=store)
        # raise it so that what was spent is 85% of the new budget: the next call goes, with a warning
        by = round(float(spent.dollars) / 0.85 - 0.01, 2)
        message = await decide_budget(temporal_client, run_id, "alice", by_usd=by, store=store)
        assert f"raised the budget by ${by:,.2f}" in message
        second = await h.wait_for(run_id, lambda s: s.pending_approval is not None
                                  and s.pending_approval.approval_id != asked[0].request_id, what="a second request")
        assert store.family_spend(run_id).requests == 2
        warned = events(store, run_id, BudgetWarning)
        assert len(warned) == 1 and warned[0].limit_usd == pytest.approx(0.01 + by), "80% of the raised budget: warned"
        assert second.pending_approval.kind == "budget"
        await decide_budget(temporal_client, run_id, "alice", by_usd=100, store=store)
        result = await h.result(run_id)
    assert result.status == "completed", result.reason
    decided = events(store, run_id, BudgetDecided)
    assert [(d.decision, d.approver, d.by_usd) for d in decided] == [("raise", "alice", by), ("raise", "alice", 100.0)]
    assert all(d.proof is not None for d in decided), "each raise is audited with its signed proof"
    assert float(store.family_spend(run_id).raised) == pytest.approx(by + 100)
    from longrun.auth.audit_check import verify_decisions

    report = verify_decisions(store, run_id)
    assert report.ok and report.checked == 2, report  # `audit --verify` re-checks each signed raise
    costs = store.request_costs(run_id)
    called = events(store, run_id, ModelCalled)
    assert [c.status for c in costs] == ["answered"] * len(called), "one ledger row per model request"
    assert sum(c.cost_usd or 0 for c in costs) == pytest.approx(sum(PRICE.cost(e.usage) for e in called))


@pytest.mark.timeout(180)
async def test_a_rejected_raise_ends_the_run_cleanly(store, temporal_client, ws):
    w, h = worker(temporal_client, store, priced(plan_provider))
    async with w:
        run_id = await h.start(spec(ws, max_cost=0.01))
        await waiting_for_budget(h, run_id)
        await decide_budget(temporal_client, run_id, "alice", reject=True, reason="enough for today", store=store)
        result = await h.result(run_id)
    assert result.status == "cancelled"
    assert "did not raise it: enough for today" in result.reason
    assert store.get_run(run_id).status == "cancelled"
    assert [d.decision for d in events(store, run_id, BudgetDecided)] == ["reject"]
    assert store.family_spend(run_id).requests == 1, "no model call after the budget was reached"


@pytest.mark.timeout(180)
async def test_unsigned_and_forged_raises_are_refused_and_audited(store, temporal_client, ws, tmp_path):
    w, h = worker(temporal_client, store, priced(plan_provider))
    async with w:
        run_id = await h.start(spec(ws, max_cost=0.01))
        status = await waiting_for_budget(h, run_id)
        request_id = status.pending_approval.approval_id
        with pytest.raises(ApprovalError, match="no signed proof"):
            await update(temporal_client, run_id, AgentRunWorkflow.raise_budget,
                         BudgetInput(request_id=request_id, approver="alice", decision="raise", by_usd=5))
        impostor = Signer(principal="alice", key=new_key(), path=tmp_path / "forged.pem")
        with pytest.raises(ApprovalError, match="not registered"):
            await decide_budget(temporal_client, run_id, impostor, by_usd=5, store=store)
        # alice's real signature on $1, presented as $1000: the signature no longer verifies
        real = Signer.load("alice").sign(BudgetRecord(run_id=run_id, principal="alice",
                                                      key_id=Signer.load("alice").key_id, issued_at=_now(),
                                                      request_id=request_id, decision="raise", by_cents=100))
        forged_record = BudgetRecord.model_validate_json(real.payload).model_copy(update={"by_cents": 100_000})
        forged = Proof(payload=forged_record.canonical(), signature=real.signature, key_id=real.key_id)
        with pytest.raises(ApprovalError, match="does not verify"):
            await update(temporal_client, run_id, AgentRunWorkflow.raise_budget,
                         BudgetInput(request_id=request_id, approver="alice", decision="raise", by_usd=1000, proof=forged))
        with pytest.raises(ApprovalError, match="not an approver"):
            await decide_budget(temporal_client, run_id, "mallory", by_usd=5, store=store)
        still = await h.status(run_id)
        assert still.pending_approval is not None and still.pending_approval.approval_id == request_id
        await decide_budget(temporal_client, run_id, "alice", reject=True, store=store)
        await h.result(run_id)
    refused = events(store, run_id, ApprovalRefused)
    reasons = " | ".join(r.reason for r in refused)
    assert "not registered" in reasons and "does not verify" in reasons, reasons
    assert all(r.approval_id == request_id for r in refused if "not registered" in r.reason or "verify" in r.reason)
    assert not [d for d in events(store, run_id, BudgetDecided) if d.decision == "raise"], "nothing was raised"
    assert store.family_spend(run_id).raised == 0


@pytest.mark.timeout(240)
async def test_a_subagents_spend_stops_its_parent(store, temporal_client, ws):
    family = FamilyProvider(briefs=["loop over mod0.py"])
    providers = {"priced": ModelProvider(factory=lambda c: family, models={"v1": (200_000, 8_192)},
                                         prices={"v1": Price(input=10.0, output=10.0)})}
    w, h = worker(temporal_client, store, providers)
    async with w:
        run_id = await h.start(RunSpec(
            objective="Survey the modules with a subagent.", workspace=str(ws), approvers=["alice"], model="priced:v1",
            caps=RunCaps(max_cost=0.2), in_place=True))
        await waiting_for_budget(h, run_id)
        spend = store.family_spend(run_id)
        own = store.run_spend([run_id])[run_id]
        assert float(own.dollars) < 0.2 <= float(spend.dollars), "the parent's own spend is under; the family's is not"
        await decide_budget(temporal_client, run_id, "alice", reject=True, store=store)
        await h.result(run_id)
    children = store.list_runs(parent_run_id=run_id)
    assert len(children) == 1
    assert children[0].status == "failed" and "budget is reached" in children[0].reason, children[0].reason
    child_spend = store.run_spend([children[0].run_id])[children[0].run_id]
    assert child_spend.requests >= 2, "the subagent spent the family's budget"


def _now() -> int:
    import time

    return int(time.time())


@pytest.mark.timeout(180)
async def test_usage_runs_and_status_show_dollars(store, temporal_client, ws, db_url, monkeypatch, capsys):
    import asyncio
    import json

    from longrun.cli import main

    monkeypatch.setenv("LONGRUN_DATABASE_URL", db_url)
    w, h = worker(temporal_client, store, priced(plan_provider))
    async with w:
        run_id = await h.start(spec(ws, max_cost=500))
        assert (await h.result(run_id)).status == "completed"
        scripted = await h.start(RunSpec(objective="Say hello.", workspace=str(ws), model="scripted", in_place=True))
        await h.result(scripted)
    capsys.readouterr()
    assert await asyncio.to_thread(main, ["usage", run_id, "--json"]) == 0
    usage = json.loads(capsys.readouterr().out)
    costs = [r["cost_usd"] for r in usage["requests"]]
    assert costs and all(c is not None and c > 0 for c in costs), "dollars per request"
    assert usage["totals"]["cost_usd"] == pytest.approx(sum(costs))
    assert usage["family"]["cost_usd"] == pytest.approx(sum(costs))
    assert await asyncio.to_thread(main, ["usage", run_id]) == 0
    text = capsys.readouterr().out
    assert "cost" in text and f"spend: {format_dollars(sum(costs))} of a budget of $500.00" in text, text
    assert await asyncio.to_thread(main, ["usage", scripted]) == 0
    assert "spend: $0.00 — the scripted stand-in costs nothing" in capsys.readouterr().out
    assert await asyncio.to_thread(main, ["runs", "--json"]) == 0
    listed = {r["run_id"]: r["cost_usd"] for r in json.loads(capsys.readouterr().out)}
    assert listed[run_id] == pytest.approx(sum(costs)) and listed[scripted] == 0.0
    assert await asyncio.to_thread(main, ["runs"]) == 0
    assert format_dollars(sum(costs)) in capsys.readouterr().out
    assert await asyncio.to_thread(main, ["status", run_id]) == 0
    assert f"spend: {format_dollars(sum(costs))} of a budget of $500.00" in capsys.readouterr().out


class TenthOfADollar(PlanProvider):
    """The plan, each request 1,000 input tokens: $0.10 at `PRICE`, so the spend before each call
    is known to the cent ($0.00, $0.10, $0.20, ...)."""

    def complete(self, request: Any) -> Any:
        return super().complete(request).model_copy(update={"usage": Usage(input_tokens=1_000)})


@pytest.mark.timeout(180)
async def test_the_budget_webhooks_are_delivered_warning_then_request(store, temporal_client, ws, monkeypatch):
    """A run with `--max-cost 0.24` and a webhook: before turn 3 it has spent $0.20 (80% is
    $0.192: the warning), before turn 4 $0.30 (the budget: a `budget` request). The receiver gets
    both, in that order, signed, with the run id, what was spent and the limit, and no secret."""
    secret, token = "whsec-" + secrets.token_hex(16), secrets.token_urlsafe(18)
    canary = "sk-ant-api03-" + secrets.token_urlsafe(36)
    plan = [[("read_file", {"path": "hello.txt"})]] * 6
    providers = {"priced": ModelProvider(factory=lambda c: TenthOfADollar(plan=plan, name=c.name, info=c.info),
                                         models={"v1": (200_000, 8_192)}, prices={"v1": PRICE})}
    with WebhookReceiver(always(200)) as rx:
        monkeypatch.setenv("LONGRUN_WEBHOOK_OPS_URL", rx.url(f"/hooks/{token}"))
        monkeypatch.setenv("LONGRUN_WEBHOOK_OPS_SECRET", secret)
        queue = f"tq-{uuid.uuid4().hex[:10]}"
        w = build_worker(temporal_client, store, settings=Settings.from_env(), providers=providers, task_queue=queue,
                         heartbeat_every=0.5, workflows=(FastNotifyWorkflow,))
        async with w:
            h = Harness(temporal_client, store, queue)
            run_id = await h.start(spec(ws, max_cost=0.24, webhooks=["ops"]).model_copy(
                update={"objective": f"Read hello.txt until told to stop; the key {canary} is not yours."}))
            status = await waiting_for_budget(h, run_id)
            await decide_budget(temporal_client, run_id, "alice", reject=True, store=store)
            result = await h.result(run_id)
    assert result.status == "cancelled", result.reason
    assert store.family_spend(run_id).requests == 3, "turns 1-3 called the model; turn 4 asked for a raise"

    got = [r for r in rx.requests if r.event in ("budget_warning", "budget_requested")]
    assert [(r.event, r.status) for r in got] == [("budget_warning", 200), ("budget_requested", 200)]
    warning, request = (r.json for r in got)
    assert (warning["run_id"], warning["spent_usd"], warning["limit_usd"]) == (run_id, pytest.approx(0.2), 0.24)
    assert "has spent 80% of its budget ($0.2000 of $0.24)" in warning["text"]
    assert (request["run_id"], request["spent_usd"], request["limit_usd"]) == (run_id, pytest.approx(0.3), 0.24)
    assert request["approval_id"] == status.pending_approval.approval_id
    assert request["command"] == f"longrun raise-budget {run_id} --by USD --as alice" and request["command"] in request["text"]
    assert "reached its budget ($0.3000 of $0.24)" in request["text"]
    for r in got:
        assert verify_signature(r.body, r.headers["X-Longrun-Signature"], secret)
        assert secret.encode() not in r.body and token.encode() not in r.body and canary.encode() not in r.body
    delivered = [r.event.event for r in store.audit(run_id) if r.kind == "notification_delivered"]
    assert delivered.count("budget_warning") == 1 and delivered.count("budget_requested") == 1
