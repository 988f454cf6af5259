"""A worker with ticketbot's tools and model, from the settings the CLI reads (LONGRUN_DATABASE_URL,
TEMPORAL_ADDRESS, LONGRUN_TASK_QUEUE, or `longrun dev up`'s stack): `python -m ticketbot.worker`.
It serves runs until SIGINT/SIGTERM (`await worker.run()` inside your own event loop)."""

import longrun
from ticketbot import model, tools

if __name__ == "__main__":
    longrun.Worker(tools=tools.TOOLS, providers={"ticketbot": model.TICKETBOT}).run_sync()
