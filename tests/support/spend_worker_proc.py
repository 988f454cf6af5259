"""A worker in its own process that kills itself (SIGKILL) at one point of a model call, for the
spend ledger's crash tests. A priced provider (`priced:v1`) follows a plan and logs every call.

    python -m tests.support.spend_worker_proc DB_URL TEMPORAL_ADDRESS TASK_QUEUE CALL_LOG KILL_AT

KILL_AT: `after-answer` (the provider answered; nothing is saved yet), `before-ledger` (the
answer and its usage are in the transcript; the ledger row is not settled), or `none`. The kill
fires once, on turn 1 (a marker file next to CALL_LOG remembers it fired).

A worker settles the answer, and writes its audit events, in the statement that appends it
(issue 26), so `before-ledger` is what a worker from before that left behind: this one appends
the answer without its settle and its audit events, then dies; the next worker must settle it once.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from longrun.models.provider import ModelRequest, ModelResponse
from longrun.providers import ModelProvider, ProviderConfig
from longrun.providers.prices import Price
from longrun.service.settings import Settings
from longrun.service.worker import build_worker
from longrun.store import Store
from tests.support.policy import PlanProvider

PLAN = [[("read_file", {"path": "hello.txt"})], [("set_next_action", {"next_action": "stop"})]]
PRICE = Price(input=100.0, output=100.0)


def _kill_once(marker: Path) -> None:
    if not marker.exists():
        marker.write_text("fired")
        os.kill(os.getpid(), signal.SIGKILL)


class LoggedPlan(PlanProvider):
    def __init__(self, config: ProviderConfig, log: Path, kill_at: str) -> None:
        super().__init__(plan=PLAN, name=config.name, info=config.info)
        self.log, self.kill_at = log, kill_at

    def complete(self, request: ModelRequest) -> ModelResponse:
        response = super().complete(request)
        turn = self.step(request) + 1
        with self.log.open("a") as f:
            f.write(f"{turn}\n")
        if self.kill_at == "after-answer" and turn == 1:
            _kill_once(self.log.with_suffix(".fired"))
        return response


class KillingStore(Store):
    """Dies between the transcript append (usage saved with the answer) and the ledger settle:
    at `before-ledger`, the answer of turn 1 is appended without its settle and its audit events
    (as a worker from before issue 26 wrote it), then the process dies."""

    kill_at = "none"
    marker = Path("/nonexistent")

    def append_transcript(self, run_id: str, message: Any, **kw: Any) -> int:
        unsettled = self.kill_at == "before-ledger" and kw.get("turn") == 1 and kw.get("settle") is not None
        if unsettled and not self.marker.exists():
            super().append_transcript(run_id, message, **{**kw, "settle": None, "audits": None})
            _kill_once(self.marker)
        return super().append_transcript(run_id, message, **kw)


async def serve(db_url: str, address: str, task_queue: str, log: str, kill_at: str) -> None:
    client = await Client.connect(address, data_converter=pydantic_data_converter)
    store = KillingStore(Store.from_url(db_url).engine)
    store.kill_at, store.marker = kill_at, Path(log).with_suffix(".fired")
    providers = {"priced": ModelProvider(factory=lambda c: LoggedPlan(c, Path(log), kill_at),
                                         models={"v1": (200_000, 8_192)}, prices={"v1": PRICE})}
    worker = build_worker(client, store, settings=Settings.from_env(), providers=providers, task_queue=task_queue,
                          heartbeat_every=0.5)
    print("worker ready", flush=True)
    await worker.run()


if __name__ == "__main__":
    asyncio.run(serve(*sys.argv[1:6]))
