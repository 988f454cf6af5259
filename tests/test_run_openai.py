"""Whole runs on the OpenAI adapters, over real HTTP against the local fake server (tests/fake_openai.py):
the worker builds the provider itself from the spec (`base_url`, `context_window`) and its
environment (the keys), as in production. Each run: the scripted agent's review with its edit
behind an approval, a compaction, canary secrets that never reach the server, an overflow that
ends in compaction and a successful retry, a malformed tool call that the run survives, and the
token cap fed by the server's usage."""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from longrun.client import decide
from longrun.client import runs as client_runs
from longrun.models.spec import ContextPolicy, RunCaps, RunSpec
from tests.fake_openai import FakeOpenAI, scripted_policy
from tests.support.harness import copy_sample, running_worker
from tests.test_secrets import EMIT_ARGV, ENV_ARGV, canaries, leaks, plant

pytestmark = pytest.mark.slow

KEY = "sk-local-fake-key"
OPENAI_KEY = "sk-proj-fake-openai-key"
TEST_ARGV = [sys.executable, "-m", "unittest", "discover", "-s", "tests", "-q"]
OBJECTIVE = "The moving averages reported by the stats helper look wrong. Find the defect and propose a fix."
APIS = {
    # api -> (model, the path its requests go to)
    "chat": ("openai-compatible:qwen3", "/v1/chat/completions"),
    "responses": ("openai:gpt-5-mini", "/v1/responses"),
}


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch, api: str) -> Iterator[FakeOpenAI]:
    with FakeOpenAI(api_key=KEY if api == "chat" else OPENAI_KEY) as f:
        monkeypatch.setenv("LONGRUN_OPENAI_API_KEY", KEY)
        monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", f.url)  # `openai:` goes to the fake; `openai-compatible:` to the spec's
        monkeypatch.delenv("LONGRUN_OPENAI_BASE_URL", raising=False)
        monkeypatch.setenv("LONGRUN_ALLOWED_BASE_URLS", f.url)  # the workers allow the spec's server
        yield f


def spec_for(api: str, fake: FakeOpenAI, ws: Any, **extra: Any) -> RunSpec:
    model, _ = APIS[api]
    server = {"base_url": fake.url, "context_window": 65_536} if api == "chat" else {}
    fields: dict[str, Any] = {"objective": OBJECTIVE, "constraints": [f"tests: {shlex.join(TEST_ARGV)}"],
                              "workspace": str(ws), "approvers": ["alice"], "allowed_commands": [TEST_ARGV],
                              "model": model, **server}
    fields.update(extra)
    return RunSpec(**fields)


async def drive_to_end(h: Any, run_id: str) -> tuple[Any, int]:
    """Approve whatever the agent proposes, as alice, until the run ends; (result, approvals)."""
    approvals = 0
    while True:
        s = await h.wait_for(run_id, lambda s: s.status in ("waiting_approval", "completed", "failed", "cancelled"))
        if s.status != "waiting_approval":
            return await h.result(run_id), approvals
        approvals += 1
        await decide.approve(h.client, run_id, s.pending_approval.approval_id, "alice")
        await h.wait_for(run_id, lambda x: x.pending_approval is None
                         or x.pending_approval.approval_id != s.pending_approval.approval_id)


def first_then_scripted(fixed: list[tuple[str, Any]]) -> Any:
    """Answer the first requests with `fixed` tool calls (arguments as dict, or a raw string), then
    like the scripted agent."""
    scripted = scripted_policy()
    pending = list(fixed)

    def policy(request: Any) -> list[dict[str, Any]]:
        if request.tools and pending:
            name, args = pending.pop(0)
            raw = args if isinstance(args, str) else json.dumps(args)
            return [{"type": "tool_use", "id": f"call_fixed_{len(pending)}", "name": name, "raw_arguments": raw}]
        return scripted(request)

    return policy


@pytest.mark.parametrize("api", ["chat", "responses"])
async def test_a_whole_run_with_approval_compaction_and_no_canary_sent(
    store, temporal_client, fake: FakeOpenAI, tmp_path, monkeypatch, api: str
) -> None:
    c = canaries()
    ws = copy_sample("tiny", tmp_path)
    plant(ws, c)
    before = (ws / "stats.py").read_text()
    monkeypatch.setenv("LONGRUN_CANARY_TOKEN", c["anthropic_key"])
    fake.set_policy(first_then_scripted([
        ("read_file", {"path": "config.env"}),
        ("read_file", '{"path": "deploy_key.pem"'),  # malformed: the run must go on
        ("read_file", {"path": "deploy_key.pem"}),
        ("run_command", {"argv": EMIT_ARGV}),
        ("run_command", {"argv": ENV_ARGV}),
    ]))
    spec = spec_for(api, fake, ws,
                    objective=OBJECTIVE + f" (The CI key, if you need it: {c['anthropic_key']})",
                    allowed_commands=[TEST_ARGV, EMIT_ARGV, ENV_ARGV],
                    # the trigger sits above the fixed part (system prompt, ~3.5k of tool definitions, the
                    # state block: about 4.1k), so a compaction has room for a summary body to ask the
                    # model for; at 3k it aimed at the fixed part and whether a body fitted at all
                    # depended on a few tokens of tool descriptions
                    context=ContextPolicy(trigger=5_000, keep=1, clear_at_least=200, tail_tokens=800,
                                          max_summary_tokens=600))
    async with running_worker(temporal_client, store) as h:
        run_id = await h.start(spec)
        await client_runs.say(h.client, h.store, run_id, f"FYI the staging db is postgres://admin:{c['say_password']}@stage/db")
        result, approvals = await drive_to_end(h, run_id)
    assert result.status == "completed", result.reason
    _, path = APIS[api]
    sent = fake.of(path)
    assert sent and all(r.status == 200 for r in sent), [r.response for r in sent if r.status != 200][:1]

    # the edit waited for alice: requested, granted, then applied
    events = [r.event for r in store.audit(run_id)]
    kinds = [e.kind for e in events]
    edits = [i for i, e in enumerate(events) if e.kind == "effect_settled" and e.tool in ("apply_patch", "write_file")]
    assert approvals >= 1 and edits and "approval_granted" in kinds
    assert kinds.index("approval_requested") < kinds.index("approval_granted") < edits[0]
    assert (ws / "stats.py").read_text() != before, "the approved edit was applied"

    # the malformed call came back to the model as a clear error, and the run went on
    results = [b for e in store.transcript(run_id) for b in e.message.tool_results() if b.is_error]
    assert any("not valid JSON" in str(b.content) and "one JSON object" in str(b.content) for b in results)

    # compaction happened; usage came from the server, cached tokens included
    assert store.projections(run_id), "the run compacted"
    calls = [r.event for r in store.audit(run_id) if r.kind == "model_called"]
    assert {c.model for c in calls} == {APIS[api][0]}
    assert sum(c.usage.cache_read_input_tokens for c in calls) > 0
    turns = [r for r in sent if r.body.get("tools")]  # the others are stage 2's summaries, by the same model
    # Each summary body the model wrote was asked of the run's model. Since the fact store (issue
    # 25), a compaction whose facts need the room writes no body at all (`summary_source` "none",
    # the state block carries the goal), and how often that happens here depends on the random
    # canaries' sizes; so the check counts the bodies the reports say the model wrote.
    sources = [p.report.summary_source for p in store.projections(run_id)]
    assert set(sources) <= {"model", "none", "extractive"}
    assert len(sent) - len(turns) >= sources.count("model"), "the summary went to the run's model"
    assert all(r.body.get("model") == APIS[api][0].split(":", 1)[1] for r in sent)
    assert [c.usage.total_input for c in calls] == [r.response["usage"][
        "prompt_tokens" if api == "chat" else "input_tokens"] for r in turns]

    # no canary in any request (headers included), nor the worker's other keys
    requests = {f"request {i}": json.dumps(r.body) + json.dumps(r.headers) for i, r in enumerate(fake.requests)}
    transcript = {f"transcript {e.seq}": json.dumps(e.message.model_dump(mode="json")) for e in store.transcript(run_id)}
    audit = {f"audit {r.seq}": json.dumps(r.event.model_dump(mode="json")) for r in store.audit(run_id)}
    assert leaks({**requests, **transcript, **audit}, c) == []
    seen = " ".join(requests.values())
    for kind in ("aws_access_key", "private_key_file", "github_token", "slack_token", "jwt", "anthropic_key"):
        assert f"[REDACTED:{kind}]" in seen, f"the model never saw a redacted {kind}"
    other_key = OPENAI_KEY if api == "chat" else KEY
    assert other_key not in seen, "a key went to a server it does not belong to"
    # the keys stay in the worker: not in the stored spec, the transcript, the audit or Temporal's history
    history = (await temporal_client.get_workflow_handle(run_id).fetch_history()).to_json()
    kept = {"spec": store.get_run(run_id).spec.model_dump_json(), "history": history, **transcript, **audit}
    assert [where for where, text in kept.items() if KEY in text or OPENAI_KEY in text] == []
    assert store.verify_chain(run_id).ok


@pytest.mark.parametrize("api", ["chat", "responses"])
async def test_an_overflow_ends_in_compaction_and_a_successful_retry(
    store, temporal_client, fake: FakeOpenAI, tmp_path, api: str
) -> None:
    fake.set_policy(scripted_policy())
    _, path = APIS[api]
    async with running_worker(temporal_client, store) as h:
        await drive_to_end(h, await h.start(spec_for(api, fake, copy_sample("tiny", tmp_path / "a"))))
    usage_key = "prompt_tokens" if api == "chat" else "input_tokens"
    sizes = [r.response["usage"][usage_key] + (r.body.get("max_tokens") or 0) for r in fake.of(path)]
    fake.window = min(sizes) + (max(sizes) - min(sizes)) * 2 // 3
    fake.requests.clear()

    async with running_worker(temporal_client, store) as h:
        run_id = await h.start(spec_for(api, fake, copy_sample("tiny", tmp_path / "b")))
        result, _ = await drive_to_end(h, run_id)
    assert result.status == "completed", result.reason
    statuses = [r.status for r in fake.of(path)]
    assert 400 in statuses, "the fake's window was reached"
    assert 200 in statuses[statuses.index(400):], "a retry after the overflow succeeded"
    audit = store.audit(run_id)
    errors = [r.event.message for r in audit if r.kind == "error"]
    assert any("too long" in e for e in errors), errors
    overflow = [r.event.report for r in audit if r.kind == "compaction" and r.event.report.trigger == "overflow"]
    assert overflow and overflow[0].outcome in ("applied", "summary_rejected")
    assert store.verify_chain(run_id).ok


@pytest.mark.parametrize("api", ["chat", "responses"])
async def test_the_token_cap_counts_the_servers_usage(store, temporal_client, fake: FakeOpenAI, tmp_path, api: str) -> None:
    fake.set_policy(scripted_policy())
    caps = RunCaps(max_tokens=5_000)
    async with running_worker(temporal_client, store) as h:
        run_id = await h.start(spec_for(api, fake, copy_sample("tiny", tmp_path), caps=caps))
        result, _ = await drive_to_end(h, run_id)
        shown = await h.status(run_id)
    assert result.status == "failed" and "token cap reached" in result.reason
    assert shown.usage.total_input + shown.usage.output_tokens >= 5_000
    usage_key = "prompt_tokens" if api == "chat" else "input_tokens"
    assert shown.usage.total_input == sum(r.response["usage"][usage_key] for r in fake.requests if r.status == 200)
