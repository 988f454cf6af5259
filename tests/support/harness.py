"""A test harness for whole runs: an in-process worker on a unique task queue, real Postgres,
the real Temporal dev server, and helpers to wait for what a user would wait for."""

from __future__ import annotations

import asyncio
import shutil
import uuid
from collections.abc import Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from temporalio.client import Client

from longrun.client import calls as client_calls
from longrun.client import runs as client_runs
from longrun.models.io import StatusQueryResult
from longrun.models.spec import RunSpec
from longrun.service.settings import Settings
from longrun.service.worker import ProviderCache, build_worker
from longrun.store import Store
from longrun.tools import ToolRegistry, default_registry
from longrun.workflows.agent_run import AgentRunWorkflow

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples"


def copy_sample(name: str, dest: Path) -> Path:
    target = dest / name
    shutil.copytree(SAMPLES / name, target)
    return target


class Harness:
    def __init__(self, client: Client, store: Store, task_queue: str) -> None:
        self.client = client
        self.store = store
        self.task_queue = task_queue

    async def start(self, spec: RunSpec, run_id: str | None = None) -> str:
        return await client_runs.start_run(self.client, self.store, spec, task_queue=self.task_queue, run_id=run_id)

    async def status(self, run_id: str) -> StatusQueryResult:
        result = await client_calls.query_status(self.client, run_id)
        assert result is not None, f"workflow {run_id} not found"
        return result

    async def wait_for(
        self, run_id: str, predicate: Callable[[StatusQueryResult], bool], timeout: float = 60.0, what: str = "condition"
    ) -> StatusQueryResult:
        deadline = asyncio.get_running_loop().time() + timeout
        last = None
        while asyncio.get_running_loop().time() < deadline:
            last = await self.status(run_id)
            if predicate(last):
                return last
            await asyncio.sleep(0.1)
        raise AssertionError(f"timed out waiting for {what}; last status: {last}")

    async def result(self, run_id: str, timeout: float = 120.0):
        handle = self.client.get_workflow_handle_for(AgentRunWorkflow.run, run_id)
        return await asyncio.wait_for(handle.result(), timeout)


async def until(what: str, check: Callable[[], Awaitable[Any]], timeout: float = 60.0) -> Any:
    """Poll `check` every 0.1 s until it returns something true (returned), or fail naming `what`."""
    for _ in range(int(timeout / 0.1)):
        value = await check()
        if value:
            return value
        await asyncio.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


@asynccontextmanager
async def running_worker(
    client: Client,
    store: Store,
    *,
    provider: Any | None = None,
    provider_for: Callable[[str], Any] | None = None,
    registry: ToolRegistry | None = None,
    task_queue: str | None = None,
    settings: Settings | None = None,
):
    """An in-process worker; `provider` replaces every model, `provider_for(model)` chooses one
    per model (else the real provider table). `settings` (default: from the environment) is the
    worker's configuration: its MCP servers, whether it allows `sandbox: none`, its base URLs."""
    task_queue = task_queue or f"tq-{uuid.uuid4().hex[:10]}"
    settings = settings or Settings.from_env()
    if provider_for is None:
        provider_for = (lambda _model: provider) if provider is not None else ProviderCache(settings)
    worker = build_worker(
        client, store, settings=settings, registry=registry or default_registry(), provider_for=provider_for,
        task_queue=task_queue, heartbeat_every=0.5,
    )
    try:
        async with worker:
            yield Harness(client, store, task_queue)
    finally:
        if isinstance(provider_for, ProviderCache):  # its SDK clients would be collected unclosed later
            provider_for.close()
