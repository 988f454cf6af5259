"""samples/custom-tool on the real stack (issue 27, item 6): ticketbot's read tool, its effect tool
with reconcile and its own model provider (a scripted stand-in) in one run, started and answered by
the sample's own user code through `longrun.Client`. The run gets a scope for the effect tool and
passes `audit --verify`; an edit at approval is what gets written; and a worker killed with kill -9
in the middle of the effect leaves exactly one write, which the next worker's reconcile settles."""

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

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "samples" / "custom-tool"
sys.path.insert(0, str(SAMPLE))

from ticketbot.model import TICKETBOT  # noqa: E402
from ticketbot.start import release_notes  # noqa: E402
from ticketbot.tools import TOOLS  # noqa: E402

from tests.support.pyast import parse  # noqa: E402

PROVIDERS = {"ticketbot": TICKETBOT}
MODEL = "ticketbot:policy-v1"

pytestmark = pytest.mark.slow


def key_file() -> str:
    return str(Path(os.environ["LONGRUN_KEYS_DIR"]) / "alice.pem")


def point_settings_at(monkeypatch, temporal_env, db_url: str, task_queue: str) -> None:
    """The sample's user code connects from the settings, as the CLI does: point them at the test's stack."""
    monkeypatch.setenv("TEMPORAL_ADDRESS", temporal_env.client.service_client.config.target_host)
    monkeypatch.setenv("LONGRUN_NAMESPACE", "default")
    monkeypatch.setenv("LONGRUN_DATABASE_URL", db_url)
    monkeypatch.setenv("LONGRUN_TASK_QUEUE", task_queue)


async def connect(temporal_env, db_url: str, task_queue: str) -> longrun.Client:
    target = temporal_env.client.service_client.config.target_host
    return await longrun.Client.connect(target=target, namespace="default", database_url=db_url,
                                        task_queue=task_queue)


def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


def kinds_and_events(records: list[longrun.AuditRecord]) -> list[tuple[str, object]]:
    return [(r.kind, r.event) for r in records]


async def run_sample(monkeypatch, temporal_env, temporal_client, store, db_url, ws: Path,
                     edit=None) -> tuple[str, longrun.Client]:
    task_queue = f"sample-{uuid.uuid4().hex[:8]}"
    point_settings_at(monkeypatch, temporal_env, db_url, task_queue)
    worker = longrun.build_worker(temporal_client, store, tools=TOOLS, providers=PROVIDERS, task_queue=task_queue,
                                  heartbeat_every=0.5)
    async with worker:
        run_id = await asyncio.wait_for(release_notes(str(ws), "alice", key_file(), edit=edit), 120)
    return run_id, await connect(temporal_env, db_url, task_queue)


@pytest.mark.timeout(180)
async def test_the_sample_uses_its_tools_and_model_gets_a_scope_and_verifies(temporal_env, temporal_client, store,
                                                                            db_url, tmp_path, capsys, monkeypatch):
    ws = workspace(tmp_path)
    run_id, client = await run_sample(monkeypatch, temporal_env, temporal_client, store, db_url, ws)
    async with client:
        status = await client.status(run_id)
        assert status.status == longrun.RunStatus.completed
        records = await client.audit(run_id)
        verified = await client.verify(run_id)
    assert verified.ok, str(verified.decisions)
    assert verified.decisions.checked >= 2, "the grant and the approval were signed and checked"

    assert (ws / "notes/T-1.md").read_text() == "# T-1\n\nT-1: login page returns 500 since the deploy\n", \
        "the effect tool wrote what the read tool returned"
    assert (ws / "notes/T-2.md").read_text() == "# T-2\n\nT-2: typo on the pricing page\n"
    events = kinds_and_events(records)
    ran = [getattr(e, "tool", None) for k, e in events if k == "tool_ran"]
    assert ran[:2] == ["lookup_ticket", "write_notes"] and ran.count("write_notes") == 2, ran
    assert [k for k, _ in events].count("approval_requested") == 1, "the second write ran under the scope"
    used = [e for k, e in events if k == "scope_used"]
    assert [getattr(e, "path", None) for e in used] == ["notes/T-2.md"]
    started = next(e for k, e in events if k == "run_started")
    assert MODEL in str(started), "the run named the sample's own model"
    out = capsys.readouterr().out
    assert "+# T-1" in out, "the sample showed the diff of the declared content"
    assert f"{run_id} completed verified: True" in out


@pytest.mark.timeout(180)
async def test_an_edit_at_approval_is_what_the_effect_tool_writes(temporal_env, temporal_client, store, db_url,
                                                                 tmp_path, monkeypatch):
    ws = workspace(tmp_path)
    edited = "# T-1\n\nLogin works again (edited by alice).\n"
    run_id, client = await run_sample(monkeypatch, temporal_env, temporal_client, store, db_url, ws, edit={"text": edited})
    async with client:
        assert (await client.status(run_id)).status == longrun.RunStatus.completed
        assert (await client.verify(run_id)).ok
    assert (ws / "notes/T-1.md").read_text() == edited, "the edited argument, not the proposed one, was written"
    assert (ws / "notes/T-2.md").read_text() == "# T-2\n\nT-2: typo on the pricing page\n"


def spawn(db_url: str, address: str, task_queue: str, count: Path, marker: Path, pause: float, log: Path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    with open(log, "a") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "tests.support.sample_worker_proc", db_url, address, task_queue, str(count),
             str(marker), str(pause)], cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)


async def wait_until(predicate, timeout: float, what: str) -> None:
    for _ in range(int(timeout / 0.05)):
        if predicate():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.timeout(240)
async def test_the_effect_tool_survives_kill_9_mid_effect_with_exactly_one_write(temporal_env, store, db_url,
                                                                                tmp_path, monkeypatch):
    ws = workspace(tmp_path)
    count, marker = tmp_path / "writes.txt", tmp_path / "marker.txt"
    task_queue = f"sample-crash-{uuid.uuid4().hex[:8]}"
    address = temporal_env.client.service_client.config.target_host
    point_settings_at(monkeypatch, temporal_env, db_url, task_queue)
    first = spawn(db_url, address, task_queue, count, marker, 60.0, tmp_path / "worker1.log")
    second = None
    try:
        async with await connect(temporal_env, db_url, task_queue) as client:
            user = asyncio.create_task(release_notes(str(ws), "alice", key_file()))
            await wait_until(lambda: marker.exists() or user.done(), 90, "the first write to happen")
            assert not user.done(), "the run must still be in the middle of its first write"
            assert (ws / "notes/T-1.md").is_file(), "the write reached its target before the kill"
            os.kill(first.pid, signal.SIGKILL)
            first.wait(10)
            second = spawn(db_url, address, task_queue, count, marker, 0.0, tmp_path / "worker2.log")
            run_id = await asyncio.wait_for(user, 150)
            assert (await client.status(run_id)).status == longrun.RunStatus.completed
            records = await client.audit(run_id)
            assert (await client.verify(run_id)).ok
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait(10)

    writes = [line.split()[1] for line in count.read_text().splitlines()]
    assert sorted(writes) == ["notes/T-1.md", "notes/T-2.md"], f"each write exactly once at its target: {writes}"
    assert (ws / "notes/T-1.md").read_text() == "# T-1\n\nT-1: login page returns 500 since the deploy\n"
    settled = [e for k, e in kinds_and_events(records) if k == "effect_settled"]
    assert [(getattr(e, "tool", ""), getattr(e, "status", ""), getattr(e, "how", "")) for e in settled] == [
        ("write_notes", "confirmed", "reconciled"), ("write_notes", "confirmed", "ran")
    ], "the sample's reconcile decided the first write happened; the second ran normally"
    intents = [getattr(e, "attempt", 0) for k, e in kinds_and_events(records) if k == "effect_intent"]
    assert 2 in intents, "the first write was retried on the new worker, and reconciled instead of written again"


def _code_lines(source: str) -> int:
    """Lines that are not blank, a comment or a docstring (imports count)."""
    import ast
    import io
    import tokenize

    docstrings: set[int] = set()
    for node in ast.walk(parse(source)):
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                docstrings.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}
    lines: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type not in skip:
            lines.update(n for n in range(tok.start[0], tok.end[0] + 1) if n not in docstrings)
    return len(lines)


def test_the_guide_shows_the_sample_as_it_is_in_under_60_lines() -> None:
    guide = (REPO / "docs" / "LIBRARY.md").read_text()
    end_to_end = guide[guide.index("## End to end"):]
    total = 0
    for name in ("tools.py", "model.py", "worker.py", "start.py"):
        source = (SAMPLE / "ticketbot" / name).read_text()
        assert f"```python\n# ticketbot/{name}\n{source}```" in end_to_end, f"docs/LIBRARY.md's {name} is not the sample's"
        total += _code_lines(source)
    assert total < 60, f"the sample is {total} lines of code; the guide promises under 60"
    assert f"**{total} lines of code**" in end_to_end, "the guide states the count it shows"


def test_the_sample_names_only_public_modules() -> None:
    allowed = {"longrun", "longrun.tools", "longrun.providers"}
    for path in (SAMPLE / "ticketbot").glob("*.py"):
        for line in path.read_text().splitlines():
            words = line.split()
            if words[:1] in (["import"], ["from"]) and words[1].startswith("longrun"):
                assert words[1] in allowed, f"{path.name} imports {words[1]}, which is not a public module"
