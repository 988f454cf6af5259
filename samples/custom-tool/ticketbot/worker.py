"""A worker with ticketbot's tools and model: `python -m ticketbot.worker` (from samples/custom-tool).
It connects from the settings the CLI reads (LONGRUN_DATABASE_URL, TEMPORAL_ADDRESS,
LONGRUN_TASK_QUEUE, or the stack `longrun dev up` started) and runs until SIGINT/SIGTERM;
`run_worker` is `build_worker(client, store, tools=..., providers=...)` run in the foreground."""

import asyncio

import longrun
from ticketbot.model import TICKETBOT
from ticketbot.tools import TOOLS

PROVIDERS = {"ticketbot": TICKETBOT}

if __name__ == "__main__":
    asyncio.run(longrun.run_worker(tools=TOOLS, providers=PROVIDERS))
