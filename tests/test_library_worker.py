"""`longrun.Worker` (issue 27): a worker started from your own code, with your `@longrun.tool` and
your model provider, serving runs that `longrun.Client` starts. Public names only: `longrun` and
`longrun.providers` (the provider protocol's types)."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest

import longrun
from longrun import providers as lp

pytestmark = pytest.mark.slow

WORDS = "the quick brown fox jumps over the lazy dog"


@longrun.tool
def count_words(text: str) -> str:
    """Count the words of a text.

    Args:
        text: the text to count.
    """
    return f"{len(text.split())} words, {len(set(text.split()))} distinct"


class CountingPolicy:
    """A scripted stand-in, not an LLM: calls count_words once, then ends quoting its result."""

    def __init__(self, config: lp.ProviderConfig) -> None:
        self.name, self.info = config.name, config.info

    def complete(self, request: lp.ModelRequest) -> lp.ModelResponse:
        blocks = [b for m in request.messages for b in m.content]
        results = [str(b.content) for b in blocks if isinstance(b, lp.ToolResultBlock)]
        usage = lp.Usage(input_tokens=self.count_tokens(request), output_tokens=10)
        if not results:
            call = lp.ToolUseBlock(id="toolu_count", name="count_words", input={"text": WORDS})
            return lp.ModelResponse(content=[call], stop_reason="tool_use", usage=usage, model=self.name)
        text = lp.TextBlock(text=f"The tool said: {results[0]}")
        return lp.ModelResponse(content=[text], stop_reason="end_turn", usage=usage, model=self.name)

    def count_tokens(self, request: lp.ModelRequest) -> int:
        return len(request.model_dump_json()) // 4


COUNTING = lp.ModelProvider(factory=CountingPolicy, models={"v1": (200_000, 4_096)})


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
