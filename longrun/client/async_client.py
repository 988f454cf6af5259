"""`longrun.Client`: start, watch, answer and steer runs from your own Python service.

A client holds the two halves of the stack: a Temporal client (the runs' workflows) and a
`Store` (PostgreSQL, their record). Build one from settings (`await Client.connect()`, which
reads LONGRUN_DATABASE_URL, TEMPORAL_ADDRESS, ... as the CLI does) or from explicit addresses
(`await Client.connect(target=..., namespace=..., database_url=...)`). Decisions are signed with
a key the caller holds: a `Signer` object, or a principal's name and the path of its key file.

Tests: tests/test_client.py (the real stack, through `import longrun` only) and
tests/test_client_errors.py.
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from temporalio.client import Client as TemporalClient

from longrun.auth.keys import Signer
from longrun.client import (
    calls,
    decide,  # a module, not its names: decide itself imports longrun.client.calls
    reports,
    runs,
    status,
)
from longrun.client.approval_view import ApprovalView, approval_view
from longrun.client.connection import connect_temporal, open_database
from longrun.client.feeds import Feeds
from longrun.models.audit import RunFinished
from longrun.models.run import PendingApproval, RunStatusView
from longrun.models.spec import RunSpec
from longrun.service.settings import Settings
from longrun.store import AuditRecord, Store
from longrun.store.records import RunRecord

Approver = Signer | str
"""Who signs a decision: a loaded `Signer`, or a principal's name (its key is read from
`key_file`, else from `$LONGRUN_HOME/keys/NAME.pem`)."""


class Client:
    """A typed async client of one longrun stack. Use as `async with await Client.connect() as c:`."""

    def __init__(self, temporal: TemporalClient, store: Store, *, task_queue: str = "longrun",
                 owns_store: bool = False) -> None:
        self.temporal = temporal
        self.store = store
        self.task_queue = task_queue
        self._owns_store = owns_store

    @classmethod
    async def connect(cls, settings: Settings | None = None, *, target: str | None = None,
                      namespace: str | None = None, database_url: str | None = None,
                      task_queue: str | None = None) -> Client:
        """A client of the stack named by `settings` (default: the environment, as the CLI reads
        it), with any explicit address taking precedence.

        Raises:
            StackNotRunning: Temporal or PostgreSQL does not answer (the message says which).
        """
        cfg = settings or Settings.from_env()
        store = open_database(database_url or cfg.database_url)
        try:
            temporal = await connect_temporal(target or cfg.temporal_address, namespace or cfg.namespace)
        except BaseException:
            store.engine.dispose()
            raise
        return cls(temporal, store, task_queue=task_queue or cfg.task_queue, owns_store=True)

    async def close(self) -> None:
        """Release the database connections this client opened (a store passed in stays open)."""
        if self._owns_store:
            self.store.engine.dispose()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.close()

    # ------------------------------------------------------------------ runs
    async def start(self, spec: RunSpec, *, run_id: str | None = None, task_queue: str | None = None) -> str:
        """Record and start a run; its id. Raises ConfigError (bad workspace or approvers)."""
        return await runs.start_run(self.temporal, self.store, spec, task_queue=task_queue or self.task_queue,
                                    run_id=run_id)

    async def status(self, run_id: str) -> RunStatusView:
        """The run's status: live from its workflow, else from PostgreSQL. Raises RunNotFoundError."""
        view, _source = await status.run_status(self.temporal, self.store, run_id)
        return view

    async def list(self, *, limit: int = 50) -> list[RunRecord]:
        """The newest runs, newest first."""
        return await asyncio.to_thread(self.store.list_runs, limit)

    async def events(self, run_id: str, *, after: int = 0, follow: bool = True,
                     interval: float = 0.25) -> AsyncIterator[AuditRecord]:
        """The run's audit records numbered after `after` (model turns are `ModelCalled` records),
        as they are written: the feed the console's live pages use. With `follow`, waits for new
        records and ends after the run's `RunFinished`; without, ends at the last one written."""
        await asyncio.to_thread(self.store.get_run, run_id)
        if not follow:
            for r in await asyncio.to_thread(self.store.audit, run_id):
                if r.seq > after:
                    yield r
            return
        feeds = Feeds(self.store, interval=interval)
        async for batch in feeds.follow(run_id, after, stop=lambda r: isinstance(r.event, RunFinished)):
            for r, _frame in batch:
                yield r

    # ------------------------------------------------------------------ approvals
    async def pending(self, run_id: str) -> PendingApproval | None:
        """The approval the run waits for, if any."""
        return (await self.status(run_id)).pending_approval

    async def approval(self, run_id: str, approval_id: str | None = None) -> ApprovalView:
        """The whole of one approval request (the newest when `approval_id` is None): full
        arguments, the canonical text its hash covers, the diff against the file as it is now."""
        return await asyncio.to_thread(approval_view, self.store, run_id, approval_id)

    async def approve(self, run_id: str, approval_id: str, approver: Approver, *, key_file: Path | str | None = None,
                      ttl_seconds: int | None = None, edit: dict[str, Any] | None = None) -> str:
        """Approve the pending action, signed (with `edit`, these arguments replace the proposed
        ones). Raises ApprovalError when refused; the refusal is in the run's audit."""
        return await decide.approve(self.temporal, run_id, approval_id, approver, ttl_seconds, store=self.store,
                                    edit=edit, key_path=_path(key_file))

    async def reject(self, run_id: str, approval_id: str, approver: Approver, reason: str, *,
                     key_file: Path | str | None = None) -> str:
        """Reject the pending action, signed; the model is told `reason`."""
        return await decide.reject(self.temporal, run_id, approval_id, approver, reason, store=self.store,
                                   key_path=_path(key_file))

    async def grant(self, run_id: str, approver: Approver, *, tools: Sequence[str], paths: Sequence[str],
                    max_uses: int, ttl_seconds: int, key_file: Path | str | None = None) -> str:
        """A signed standing approval (scope) for `tools` on `paths` (globs); the scope's id."""
        scope_id, _answer = await decide.grant_scope(
            self.temporal, self.store, run_id, approver, tools=tools, paths=paths, max_uses=max_uses,
            ttl_seconds=ttl_seconds, key_path=_path(key_file))
        return scope_id

    async def revoke(self, run_id: str, scope_id: str, approver: Approver, *,
                     key_file: Path | str | None = None) -> str:
        """End a scope, signed."""
        return await decide.revoke_scope(self.temporal, self.store, run_id, scope_id, approver,
                                         key_path=_path(key_file))

    # ------------------------------------------------------------------ steering
    async def pause(self, run_id: str) -> str:
        return await calls.control(self.temporal, run_id, "pause")

    async def resume(self, run_id: str) -> str:
        return await calls.control(self.temporal, run_id, "resume")

    async def cancel(self, run_id: str) -> str:
        """Stop the run at its next turn boundary (an effect under way settles first)."""
        return await calls.control(self.temporal, run_id, "cancel")

    async def compact_now(self, run_id: str) -> str:
        return await calls.control(self.temporal, run_id, "compact_now")

    async def say(self, run_id: str, text: str, *, constraint: bool = False) -> str:
        """Give the run an instruction (a standing constraint when `constraint`)."""
        return await runs.say(self.temporal, self.store, run_id, text, constraint=constraint)

    # ------------------------------------------------------------------ the record
    async def audit(self, run_id: str) -> builtins.list[AuditRecord]:
        """The run's audit log, oldest first. Raises RunNotFoundError."""
        await asyncio.to_thread(self.store.get_run, run_id)
        return await asyncio.to_thread(self.store.audit, run_id)

    async def verify(self, run_id: str) -> reports.Verification:
        """The run's hash chains and signed decisions, re-checked (`.ok`, and `str()` of each part)."""
        return await asyncio.to_thread(reports.verify_run, self.store, run_id)

    async def diff(self, run_id: str, *, stat: bool = False) -> str | None:
        """The run's git change set as a patch, or None when it worked in the folder itself."""
        return await asyncio.to_thread(reports.change_set_diff, self.store, run_id, stat=stat)

    async def usage(self, run_id: str) -> reports.RunUsage:
        """Tokens and calls, summed over the run's audit log."""
        return await asyncio.to_thread(reports.run_usage, self.store, run_id)


def _path(p: Path | str | None) -> Path | None:
    return Path(p) if p is not None else None


__all__ = ["Approver", "Client"]
