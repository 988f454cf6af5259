"""`longrun.SyncClient`: `longrun.Client` for code that is not async (scripts, CI steps, Django
views). Each call runs the async client's method on an event loop this object owns, so the
Temporal connection, which belongs to the loop that opened it, is reused from call to call.

It cannot be used from inside a running event loop (use `longrun.Client` there); it says so.
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import Awaitable, Coroutine, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from longrun.client import reports
from longrun.client.approval_view import ApprovalView
from longrun.client.async_client import Approver, Client
from longrun.models.run import PendingApproval, RunStatusView
from longrun.models.spec import RunSpec
from longrun.service.settings import Settings
from longrun.store import AuditRecord, Store
from longrun.store.records import RunRecord

T = TypeVar("T")


class SyncClient:
    """The blocking twin of `longrun.Client`: the same methods, each returning its result."""

    def __init__(self, settings: Settings | None = None, *, target: str | None = None, namespace: str | None = None,
                 database_url: str | None = None, task_queue: str | None = None) -> None:
        """Connect as `Client.connect` does. Raises StackNotRunning."""
        self._loop = asyncio.new_event_loop()
        try:
            self._client = self._run(Client.connect(settings, target=target, namespace=namespace,
                                                    database_url=database_url, task_queue=task_queue))
        except BaseException:
            self._loop.close()
            raise

    def _run(self, step: Awaitable[T]) -> T:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return self._loop.run_until_complete(step)
        if isinstance(step, Coroutine):
            step.close()
        raise RuntimeError("SyncClient blocks, so it cannot run inside an event loop: use `longrun.Client` there")

    @property
    def store(self) -> Store:
        return self._client.store

    def close(self) -> None:
        if not self._loop.is_closed():
            self._run(self._client.close())
            self._loop.close()

    def __enter__(self) -> SyncClient:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def start(self, spec: RunSpec, *, run_id: str | None = None, task_queue: str | None = None) -> str:
        return self._run(self._client.start(spec, run_id=run_id, task_queue=task_queue))

    def status(self, run_id: str) -> RunStatusView:
        return self._run(self._client.status(run_id))

    def list(self, *, limit: int = 50) -> list[RunRecord]:
        return self._run(self._client.list(limit=limit))

    def events(self, run_id: str, *, after: int = 0, follow: bool = True,
               interval: float = 0.25) -> Iterator[AuditRecord]:
        """As `Client.events`, one record at a time; stop iterating to stop following."""
        agen = self._client.events(run_id, after=after, follow=follow, interval=interval)
        try:
            while True:
                try:
                    yield self._run(anext(agen))
                except StopAsyncIteration:
                    return
        finally:
            self._run(agen.aclose())  # type: ignore[attr-defined]

    def pending(self, run_id: str) -> PendingApproval | None:
        return self._run(self._client.pending(run_id))

    def approval(self, run_id: str, approval_id: str | None = None) -> ApprovalView:
        return self._run(self._client.approval(run_id, approval_id))

    def approve(self, run_id: str, approval_id: str, approver: Approver, *, key_file: Path | str | None = None,
                ttl_seconds: int | None = None, edit: dict[str, Any] | None = None) -> str:
        return self._run(self._client.approve(run_id, approval_id, approver, key_file=key_file,
                                              ttl_seconds=ttl_seconds, edit=edit))

    def reject(self, run_id: str, approval_id: str, approver: Approver, reason: str, *,
               key_file: Path | str | None = None) -> str:
        return self._run(self._client.reject(run_id, approval_id, approver, reason, key_file=key_file))

    def grant(self, run_id: str, approver: Approver, *, tools: Sequence[str], paths: Sequence[str], max_uses: int,
              ttl_seconds: int, key_file: Path | str | None = None) -> str:
        return self._run(self._client.grant(run_id, approver, tools=tools, paths=paths, max_uses=max_uses,
                                            ttl_seconds=ttl_seconds, key_file=key_file))

    def revoke(self, run_id: str, scope_id: str, approver: Approver, *, key_file: Path | str | None = None) -> str:
        return self._run(self._client.revoke(run_id, scope_id, approver, key_file=key_file))

    def pause(self, run_id: str) -> str:
        return self._run(self._client.pause(run_id))

    def resume(self, run_id: str) -> str:
        return self._run(self._client.resume(run_id))

    def cancel(self, run_id: str) -> str:
        return self._run(self._client.cancel(run_id))

    def compact_now(self, run_id: str) -> str:
        return self._run(self._client.compact_now(run_id))

    def say(self, run_id: str, text: str, *, constraint: bool = False) -> str:
        return self._run(self._client.say(run_id, text, constraint=constraint))

    def audit(self, run_id: str) -> builtins.list[AuditRecord]:
        return self._run(self._client.audit(run_id))

    def verify(self, run_id: str) -> reports.Verification:
        return self._run(self._client.verify(run_id))

    def diff(self, run_id: str, *, stat: bool = False) -> str | None:
        return self._run(self._client.diff(run_id, stat=stat))

    def usage(self, run_id: str) -> reports.RunUsage:
        return self._run(self._client.usage(run_id))


__all__ = ["SyncClient"]
