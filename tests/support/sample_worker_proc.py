"""The custom-tool sample's worker in a process of its own, for the kill -9 test: ticketbot's
tools and model (samples/custom-tool), with `write_notes` wrapped so the test can count each
write *at its target* (a line in COUNT_FILE per call, in every process) and kill the worker in
the middle of the effect (after the write, a line in MARKER_FILE, then a pause of PAUSE seconds
before the activity could report it).

    python -m tests.support.sample_worker_proc DB_URL TEMPORAL_ADDRESS TASK_QUEUE COUNT_FILE MARKER_FILE PAUSE

The wrapper changes neither the tool's name nor its schema, so the run's recorded tool list
(`run_tools`) is the sample's own, and the second worker's reconcile is the sample's.
"""

from __future__ import annotations

import asyncio
import dataclasses
import sys
import time
from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

import longrun
from longrun.store import Store
from longrun.tools import Tool, ToolContext, ToolOutcome

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "custom-tool"
sys.path.insert(0, str(SAMPLE))

from ticketbot.model import TICKETBOT  # noqa: E402
from ticketbot.tools import TOOLS, write_notes  # noqa: E402


def counted(tool: Tool, count_file: Path, marker_file: Path, pause: float) -> Tool:
    """`tool`, counting each call before it writes and pausing after it wrote."""
    real = tool.run
    assert real is not None

    def run(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        with count_file.open("a") as out:
            out.write(f"{ctx.action_id} {args['path']}\n")
        outcome = real(args, ctx)
        if pause:
            with marker_file.open("a") as out:
                out.write(f"{ctx.action_id} {args['path']}\n")
            time.sleep(pause)
        return outcome

    return dataclasses.replace(tool, run=run)


async def main(db_url: str, address: str, task_queue: str, count_file: str, marker_file: str, pause: str) -> None:
    tools = [counted(t, Path(count_file), Path(marker_file), float(pause)) if t is write_notes else t for t in TOOLS]
    client = await Client.connect(address, data_converter=pydantic_data_converter)
    worker = longrun.build_worker(client, Store.from_url(db_url), tools=tools, providers={"ticketbot": TICKETBOT},
                                  task_queue=task_queue, heartbeat_every=0.5)
    print("worker ready", flush=True)
    await worker.run()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:7]))
