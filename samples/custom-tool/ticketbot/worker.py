"""A worker with ticketbot's tools and model, from the settings the CLI reads (LONGRUN_DATABASE_URL,
TEMPORAL_ADDRESS, LONGRUN_TASK_QUEUE, or `longrun dev up`'s stack): `python -m ticketbot.worker`.
`run_worker` runs `build_worker(client, store, tools=..., providers=...)` until SIGINT/SIGTERM."""

import asyncio

import longrun
from ticketbot import model, tools

if __name__ == "__main__":
    asyncio.run(longrun.run_worker(tools=tools.TOOLS, providers={"ticketbot": model.TICKETBOT}))
