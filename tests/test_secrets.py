"""Canary secrets never leave unredacted: planted in workspace files (a key read past its BEGIN line
and by grep for its base64 lines, a `.netrc`, a `*_KEY=` variable among them), in the worker's
environment, in tool output, in the objective, a constraint and an instruction sent with `say`,
through a whole run of the scripted agent as `anthropic:claude-sonnet-4-6` over real HTTP against the fake Messages
server (which records every request). Afterwards no canary is in any request body, in the
transcript, in any projection or summary, in any audit event or in the state history; and the
model did see the redaction markers, so the canaries did travel through the run."""

from __future__ import annotations

import json
import random
import shlex
import string
import sys

import pytest

from longrun.client import decide
from longrun.client import runs as client_runs
from longrun.models.spec import ContextPolicy, RunSpec
from longrun.providers import get_provider
from longrun.tools.commands import minimal_env
from tests.fake_anthropic import scripted_policy, tool_use_response
from tests.fixtures.anthropic import FAKE_API_KEY
from tests.support.harness import copy_sample, running_worker

pytestmark = pytest.mark.slow

TEST_ARGV = [sys.executable, "-m", "unittest", "discover", "-s", "tests", "-q"]
EMIT_ARGV = [sys.executable, "emit.py"]
ENV_ARGV = [sys.executable, "-c", "import os, json; print(json.dumps(dict(os.environ)))"]


def _rnd(n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    rng = random.SystemRandom()
    return "".join(rng.choice(alphabet) for _ in range(n))


def canaries() -> dict[str, str]:
    """Fresh secret-shaped values of several kinds (the substring a leak would show)."""
    upper = string.ascii_uppercase + string.digits
    return {
        "anthropic_key": "sk-ant-api03-" + _rnd(48),
        "openai_key": "sk-proj-" + _rnd(32) + "7",
        "aws_access_key": "AKIA" + _rnd(16, upper),
        "aws_secret_key": _rnd(40, string.ascii_letters + string.digits + "/+"),
        "github_token": "ghp_" + _rnd(36),
        "slack_token": "xoxp-" + _rnd(10, string.digits) + "-" + _rnd(24),
        "jwt": "eyJ" + _rnd(24) + ".eyJ" + _rnd(30) + "." + _rnd(32),
        "private_key_body": _rnd(64, string.ascii_letters + string.digits + "+/"),
        "url_password": "pw" + _rnd(18),
        "bearer": _rnd(32),
        "say_password": "Zq" + _rnd(20),
        # issue 24, finding 5: a key read past its BEGIN line, grep for base64, .netrc, *_KEY=
        "openssh_key_body": _rnd(70, string.ascii_letters + string.digits + "+/"),
        "netrc_password": "nP" + _rnd(18),
        "env_key": _rnd(32, "0123456789abcdef"),
    }


def plant(ws, c: dict[str, str]) -> None:
    (ws / "config.env").write_text(
        f"AWS_ACCESS_KEY_ID={c['aws_access_key']}\nAWS_SECRET_ACCESS_KEY={c['aws_secret_key']}\n"
        f"DATABASE_URL=postgres://app:{c['url_password']}@db.internal:5432/prod\n"
    )
    (ws / "deploy_key.pem").write_text(
        "-----BEGIN RSA PRIVATE KEY-----\n" + c["private_key_body"] + "\n" + _rnd(64) + "\n-----END RSA PRIVATE KEY-----\n"
    )
    (ws / "id_ed25519").write_text(  # lines 2-6 are the body, the canary on line 4
        "-----BEGIN OPENSSH " + "PRIVATE KEY-----\n" + "\n".join(_rnd(70) for _ in range(2)) + "\n"
        + c["openssh_key_body"] + "\n" + "\n".join(_rnd(70) for _ in range(2)) + "\n-----END OPENSSH " + "PRIVATE KEY-----\n"
    )
    (ws / "netrc").write_text(f"machine git.internal.example.com\n  login deploy\n  password {c['netrc_password']}\n")
    (ws / "sentry.env").write_text(f"SENTRY_DSN_HOST=sentry.internal\nSENTRY_AUTH_KEY={c['env_key']}\n")
    stats = ws / "stats.py"  # a file the scripted agent reads on its own
    stats.write_text(stats.read_text() + f'\nGITHUB_TOKEN = "{c["github_token"]}"  # moving average upload\n')
    # tool output only: the script assembles the values at run time, its text holds neither whole
    slack, jwt = c["slack_token"], c["jwt"]
    (ws / "emit.py").write_text(
        f"print('slack: ' + {slack[:4]!r} + {slack[4:]!r})\nprint('session: ' + {jwt[:6]!r} + {jwt[6:]!r})\n"
    )


def fixed_then_scripted():
    """The first turns read the canary files and run the two commands; then the scripted agent."""
    fixed = [
        ("read_file", {"path": "config.env"}),
        ("read_file", {"path": "deploy_key.pem"}),
        ("read_file", {"path": "id_ed25519", "offset": 3, "limit": 3}),  # past the BEGIN line
        ("grep", {"pattern": "^[A-Za-z0-9+/=]{16,}$"}),  # the key bodies' lines, wherever they are
        ("read_file", {"path": "netrc"}),
        ("read_file", {"path": "sentry.env"}),
        ("run_command", {"argv": EMIT_ARGV}),
        ("run_command", {"argv": ENV_ARGV}),
    ]
    scripted = scripted_policy()
    pending = list(fixed)  # each served once (compaction changes what the requests look like)

    def policy(body):
        if body.get("tools") and pending:
            name, args = pending.pop(0)
            return tool_use_response(name, args)
        return scripted(body)

    return policy


async def drive_to_end(h, run_id: str):
    """Approve whatever the agent proposes, as alice, until the run ends."""
    while True:
        s = await h.wait_for(run_id, lambda s: s.status in ("waiting_approval", "completed", "failed", "cancelled"))
        if s.status != "waiting_approval":
            return await h.result(run_id)
        await decide.approve(h.client, run_id, s.pending_approval.approval_id, "alice")
        await h.wait_for(run_id, lambda x: x.pending_approval is None
                         or x.pending_approval.approval_id != s.pending_approval.approval_id)


def leaks(texts: dict[str, str], c: dict[str, str]) -> list[str]:
    return [f"{kind} in {where}" for where, text in texts.items() for kind, value in c.items() if value in text]


async def test_no_canary_leaves_unredacted(store, temporal_client, fake_anthropic, tmp_path, monkeypatch):
    c = canaries()
    ws = copy_sample("tiny", tmp_path)
    plant(ws, c)
    # the worker's own environment holds secrets; run_command's minimal env must not pass them on
    monkeypatch.setenv("OPENAI_API_KEY", c["openai_key"])
    monkeypatch.setenv("LONGRUN_CANARY_TOKEN", c["anthropic_key"])
    assert set(minimal_env(ws)) == {"PATH", "HOME", "LANG"}

    fake_anthropic.set_policy(fixed_then_scripted())
    provider = get_provider("anthropic:claude-sonnet-4-6", api_key=FAKE_API_KEY, base_url=fake_anthropic.url)
    spec = RunSpec(
        objective="The moving averages reported by the stats helper look wrong. Find the defect and propose a fix. "
                  f"(The CI key, if you need it: {c['anthropic_key']})",
        constraints=[f"tests: {shlex.join(TEST_ARGV)}", f"call the API with Authorization: Bearer {c['bearer']}"],
        workspace=str(ws),
        approvers=["alice"],
        allowed_commands=[TEST_ARGV, EMIT_ARGV, ENV_ARGV],
        model="anthropic:claude-sonnet-4-6",
        context=ContextPolicy(trigger=3_000, keep=1, clear_at_least=200, tail_tokens=800,
                              max_summary_tokens=600),
    )
    async with running_worker(temporal_client, store, provider=provider) as h:
        run_id = await h.start(spec)
        await client_runs.say(h.client, h.store, run_id, f"FYI the staging db is postgres://admin:{c['say_password']}@stage/db")
        result = await drive_to_end(h, run_id)
    assert result.status == "completed", result.reason

    requests = {f"request {i}": json.dumps(r.body) for i, r in enumerate(fake_anthropic.requests)}
    transcript = {f"transcript {e.seq}": json.dumps(e.message.model_dump(mode="json")) for e in store.transcript(run_id)}
    projections = {f"projection {p.version}": json.dumps({"summary": p.summary,
                                                          "messages": [m.model_dump(mode="json") for m in p.messages]})
                   for p in store.projections(run_id)}
    audit = {f"audit {r.seq} {r.kind}": json.dumps(r.event.model_dump(mode="json")) for r in store.audit(run_id)}
    history = {f"state v{v.version}": json.dumps(v.state.model_dump(mode="json")) + v.reason
               for v in store.state_history(run_id)}
    record = store.get_run(run_id)
    spec_text = {"runs.spec": json.dumps(record.spec.model_dump(mode="json")), "runs.reason": record.reason}

    found = leaks({**requests, **transcript, **projections, **audit, **history, **spec_text}, c)
    assert found == [], f"canaries leaked: {found}"

    # the canaries did travel: the model saw each kind as a redaction marker, and the run compacted
    seen = " ".join(requests.values())
    for kind in ("aws_access_key", "aws_secret_key", "url_password", "github_token", "slack_token",
                 "jwt", "anthropic_key", "bearer_token", "private_key_file", "netrc_password", "env_key"):
        assert f"[REDACTED:{kind}]" in seen, f"the model never saw a redacted {kind}: the canary did not reach it"
    env_dump = [t for t in transcript.values() if "PATH" in t and "LANG" in t]
    assert env_dump and "OPENAI_API_KEY" not in env_dump[0] and "LONGRUN_CANARY_TOKEN" not in env_dump[0]
    assert projections, "the run compacted (a summary or projection was written)"
    assert store.verify_chain(run_id).ok
