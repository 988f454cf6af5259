"""`longrun.Worker` (issue 27): a worker started from your own code, with your `@longrun.tool` and
your model provider, serving runs that `longrun.Client` starts; and `longrun worker --tools
--providers`, the same from the command line. Public names only (`longrun`; the tool and the
provider are in tests/support/counting.py)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

import longrun
from tests.support.counting import COUNTING, count_words

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]


def point_settings_at(monkeypatch, temporal_env, db_url: str, home: Path) -> str:
    """The worker reads its settings as the CLI does: point them at the test's stack."""
    target = temporal_env.client.service_client.config.target_host
    monkeypatch.setenv("LONGRUN_HOME", str(home))
    monkeypatch.setenv("TEMPORAL_ADDRESS", target)
    monkeypatch.setenv("LONGRUN_NAMESPACE", "default")
    monkeypatch.setenv("LONGRUN_DATABASE_URL", db_url)
    return target


@pytest.mark.timeout(180)
async def test_a_client_run_uses_the_custom_tool_of_a_library_worker(temporal_env, db_url, tmp_path, monkeypatch):
    target = point_settings_at(monkeypatch, temporal_env, db_url, tmp_path / "home")
    task_queue = f"library-{uuid.uuid4().hex[:8]}"
    ws = tmp_path / "ws"
    ws.mkdir()
    worker = longrun.Worker(tools=[count_words], providers={"counting": COUNTING}, task_queue=task_queue)
    serving = asyncio.create_task(worker.run())
    try:
        async with await longrun.Client.connect(target=target, database_url=db_url, task_queue=task_queue) as client:
            run_id = await client.start(longrun.RunSpec(objective="Count the words of the sentence.",
                                                        workspace=str(ws), model="counting:v1"))
            async for _ in client.events(run_id, follow=True):  # ends after the run finishes
                pass
            status = await client.status(run_id)
            audit = await client.audit(run_id)
    finally:
        worker.stop()
        await asyncio.wait_for(serving, 60)  # stop() ends run(): it returns, it does not hang
    assert status.status == longrun.RunStatus.completed, status.reason
    ran = [r.event for r in audit if r.kind == "tool_ran"]
    assert [(e.tool, e.is_error, e.summary) for e in ran] == [("count_words", False, "9 words, 8 distinct")]
    assert status.tool_calls == 1


def test_a_tool_whose_name_is_taken_is_refused_when_the_worker_is_made(monkeypatch, tmp_path):
    """Refused at construction, before anything connects: no stack is running here."""
    monkeypatch.setenv("LONGRUN_HOME", str(tmp_path))

    @longrun.tool
    def read_file(path: str) -> str:
        """Shadow the built-in.

        Args:
            path: a path.
        """
        return path

    with pytest.raises(longrun.ConfigError, match="read_file"):
        longrun.Worker(tools=[read_file])
    with pytest.raises(longrun.ConfigError, match="built-in"):
        longrun.Worker(providers={"anthropic": COUNTING})


def spawn_worker(args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "longrun.cli", "worker", *args], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def worker_env(home: Path, target: str | None = None, db_url: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TEMPORAL_ADDRESS", "LONGRUN_DATABASE_URL")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
    env["LONGRUN_HOME"] = str(home)
    if target and db_url:
        env.update(TEMPORAL_ADDRESS=target, LONGRUN_DATABASE_URL=db_url, LONGRUN_NAMESPACE="default")
    return env


@pytest.mark.parametrize("providers", ["counting=tests.support.counting:COUNTING", "tests.support.counting:PROVIDERS"])
@pytest.mark.timeout(180)
async def test_longrun_worker_loads_providers_from_a_module(providers, temporal_env, db_url, tmp_path):
    """`--providers PREFIX=module:attr` (one provider) or `--providers module:attr` (a dict of them):
    a run naming the provider's model completes on that worker, which says what it loaded."""
    target = temporal_env.client.service_client.config.target_host
    task_queue = f"cli-providers-{uuid.uuid4().hex[:8]}"
    ws = tmp_path / "ws"
    ws.mkdir()
    proc = spawn_worker(["--task-queue", task_queue, "--tools", "tests.support.counting:TOOLS",
                         "--providers", providers], worker_env(tmp_path / "home", target, db_url))
    try:
        assert proc.stdout is not None
        ready = await asyncio.wait_for(asyncio.to_thread(proc.stdout.readline), 120)
        assert "custom tools: count_words; custom model providers: counting" in ready, ready
        async with await longrun.Client.connect(target=target, database_url=db_url, task_queue=task_queue) as client:
            run_id = await client.start(longrun.RunSpec(objective="Count the words.", workspace=str(ws),
                                                        model="counting:v1"))
            async for _ in client.events(run_id, follow=True):
                pass
            status = await client.status(run_id)
            audit = await client.audit(run_id)
    finally:
        proc.send_signal(signal.SIGTERM)
        code = await asyncio.to_thread(proc.wait, 60)
        assert proc.stdout is not None
        proc.stdout.close()
    assert code == 0, "SIGTERM stops the worker cleanly"
    assert status.status == longrun.RunStatus.completed, status.reason
    assert [(r.event.tool, r.event.summary) for r in audit if r.kind == "tool_ran"] == [
        ("count_words", "9 words, 8 distinct")]


@pytest.mark.parametrize(("reference", "says"), [
    ("tests.support.counting", "write it as PREFIX=package.module:attr"),
    ("tests.support.nosuch:X", "cannot import 'tests.support.nosuch'"),
    ("tests.support.counting:NOPE", "has no attribute 'NOPE'"),
    ("tests.support.counting:NOT_A_PROVIDER", "is a str, not a longrun.providers.ModelProvider"),
    ("counting=tests.support.counting:PROVIDERS", "is a dict, not a longrun.providers.ModelProvider"),
    ("anthropic=tests.support.counting:COUNTING", "'anthropic' is a built-in one"),
    ("counting=tests.support.counting:COUNTING --providers tests.support.counting:PROVIDERS",
     "prefix 'counting' is loaded twice"),
])
def test_longrun_worker_refuses_providers_it_cannot_load_before_connecting(reference, says, tmp_path):
    """No stack runs here: each refusal comes before the worker connects, exit code 2, saying what to fix."""
    done = subprocess.run([sys.executable, "-m", "longrun.cli", "worker", "--providers", *reference.split()], cwd=REPO,
                          env=worker_env(tmp_path / "home"), capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert says in done.stderr, done.stderr
