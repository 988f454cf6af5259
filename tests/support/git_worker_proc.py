"""A worker in its own process for the kill -9 tests of git change sets: the run workflow and the
real activities, a plan-driven model, and `write_file` without the approval step (so no human
is needed) that pauses at a chosen point of a git-backed edit, after writing `MARKER`:

- `after-write`: the file is written, the commit not made; a stale `index.lock` is left in the
  worktree's git dir as well, as a `git add` killed midway leaves one;
- `after-commit`: the commit is made, the effect not yet settled.

    python -m tests.support.git_worker_proc DB_URL TEMPORAL_ADDRESS TASK_QUEUE PLAN_JSON PHASE PAUSE MARKER
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from longrun.activities import changes
from longrun.service.worker import build_worker
from longrun.store import Store
from longrun.tools import ToolRegistry, default_registry
from longrun.tools.base import Tool, ToolContext, ToolOutcome
from longrun.workspace.git import git
from tests.support.policy import PlanProvider


def _pause(marker: Path, seconds: float) -> None:
    marker.write_text("paused")
    time.sleep(seconds)


def registry(phase: str, pause: float, marker: Path) -> ToolRegistry:
    tools = default_registry()
    original = tools.get("write_file")
    assert original.run is not None
    run = original.run

    def write_then_pause(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        outcome = run(args, ctx)
        if phase == "after-write" and pause:
            gitdir = Path(git(ctx.workspace, "rev-parse", "--absolute-git-dir"))
            (gitdir / "index.lock").write_text("")  # what a `git add` killed midway leaves
            _pause(marker, pause)
        return outcome

    patched: list[Tool] = [dataclasses.replace(original, needs_approval=False, run=write_then_pause)
                           if t.name == "write_file" else t for t in (tools.get(n) for n in tools.names())]
    if phase == "after-commit" and pause:
        real = changes.commit_effect

        def commit_then_pause(*a: Any, **kw: Any) -> str:
            sha = real(*a, **kw)
            _pause(marker, pause)
            return sha

        changes.commit_effect = commit_then_pause  # type: ignore[assignment]
    return ToolRegistry(patched)


async def serve(db_url: str, address: str, task_queue: str, plan_json: str, phase: str, pause: float,
                marker: str) -> None:
    plan = [[(tool, args) for tool, args in step] for step in json.loads(plan_json)]
    client = await Client.connect(address, data_converter=pydantic_data_converter)
    store = Store.from_url(db_url)
    provider = PlanProvider(plan=plan)
    worker = build_worker(client, store, registry=registry(phase, pause, Path(marker)),
                          provider_for=lambda _m: provider, task_queue=task_queue, heartbeat_every=0.5)
    print("worker ready", flush=True)
    await worker.run()


if __name__ == "__main__":
    a = sys.argv[1:]
    asyncio.run(serve(a[0], a[1], a[2], a[3], a[4], float(a[5]), a[6]))
