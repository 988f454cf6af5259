"""Live feeds of runs' audit logs: the console's server-sent events and `longrun.Client.events`.

Pages update from the audit log (model turns, gate verdicts, tool results, state commits,
approvals, compactions, the run's end), which is the record, so what a page shows live is what
`longrun audit` shows later. One poller per watched run reads the new rows (`Store.audit_page`,
one indexed query every `interval` seconds) and hands each to every subscriber's queue: 200
browsers on one run cost one query per interval, not 200.

No event is dropped: a subscriber first reads the backlog after the id it already has (the SSE
`Last-Event-ID` on a reconnect), then takes the queue, skipping what the backlog covered. Queues
are unbounded; a subscriber that goes away is removed, and a feed with no subscribers stops.

The poller's cursor belongs to the feed, never to a subscriber: it starts at the run's highest
sequence number as the database has it (read after the first queue is registered and before its
backlog is read, so nothing falls between the two), and moves only past rows it read. What a
client sends as `Last-Event-ID` moves only its own cursor, clamped to that same head: a made-up
999999999 cannot silence the other viewers of the run.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from longrun.store import AuditRecord, Store

PAGE = 500


@dataclass
class _Feed:
    run_id: str
    last: int | None = None
    queues: set[asyncio.Queue[AuditRecord]] = field(default_factory=set)
    task: asyncio.Task[None] | None = None
    rendered: dict[int, bytes] = field(default_factory=dict)
    """The last rendered records (seq -> frame): 200 subscribers render an event once."""


class Feeds:
    """The live feeds of one console process."""

    def __init__(self, store: Store, *, interval: float = 0.25,
                 render: Callable[[AuditRecord], bytes] = lambda r: str(r.seq).encode()) -> None:
        self.store = store
        self.interval = interval
        self.render = render
        self._feeds: dict[str, _Feed] = {}

    def _rendered(self, feed: _Feed, r: AuditRecord) -> bytes:
        text = feed.rendered.get(r.seq)
        if text is None:
            text = feed.rendered[r.seq] = self.render(r)
            while len(feed.rendered) > 2 * PAGE:
                del feed.rendered[next(iter(feed.rendered))]
        return text

    async def _poll(self, feed: _Feed) -> None:
        while feed.queues:
            if feed.last is None:  # (set before the task starts)
                break
            try:
                rows = await asyncio.to_thread(self.store.audit_page, feed.run_id, after_seq=feed.last, limit=PAGE)
            except Exception:  # the database blinked: try again next interval
                rows = []
            for r in rows:
                for q in feed.queues:
                    q.put_nowait(r)
            if rows:
                feed.last = rows[-1].seq
            if len(rows) < PAGE:
                await asyncio.sleep(self.interval)
        self._drop(feed)

    def _drop(self, feed: _Feed) -> None:
        if self._feeds.get(feed.run_id) is feed:
            del self._feeds[feed.run_id]

    async def follow(self, run_id: str, after: int = 0, *,
                     stop: Callable[[AuditRecord], bool] | None = None,
                     ) -> AsyncIterator[list[tuple[AuditRecord, bytes]]]:
        """Every audit record of `run_id` numbered after `after`, as it is written, with its
        rendering, in batches (what is ready at once goes in one write to the client); ends
        after a record for which `stop` is true (or when the caller stops iterating)."""
        feed = self._feeds.setdefault(run_id, _Feed(run_id))
        queue: asyncio.Queue[AuditRecord] = asyncio.Queue()
        feed.queues.add(queue)
        try:
            head = await asyncio.to_thread(self.store.audit_head_seq, run_id)
            if feed.task is None or feed.task.done():
                feed.last = head
                feed.task = asyncio.create_task(self._poll(feed))
            sent = min(after, head)
            while True:
                rows = await asyncio.to_thread(self.store.audit_page, run_id, after_seq=sent, limit=PAGE)
                batch, ended = self._batch(feed, rows, sent, stop)
                if batch:
                    sent = batch[-1][0].seq
                    yield batch
                if ended:
                    return
                if len(rows) < PAGE:
                    break
            while True:
                ready = [await queue.get()]
                while not queue.empty():
                    ready.append(queue.get_nowait())
                batch, ended = self._batch(feed, ready, sent, stop)
                if batch:
                    sent = batch[-1][0].seq
                    yield batch
                if ended:
                    return
        finally:
            feed.queues.discard(queue)
            if not feed.queues:
                if feed.task is not None:
                    feed.task.cancel()
                self._drop(feed)

    def _batch(self, feed: _Feed, rows: list[AuditRecord], sent: int,
               stop: Callable[[AuditRecord], bool] | None) -> tuple[list[tuple[AuditRecord, bytes]], bool]:
        """The rows after `sent`, rendered, up to and including the first that stops the feed."""
        out = []
        for r in rows:
            if r.seq <= sent:
                continue
            out.append((r, self._rendered(feed, r)))
            sent = r.seq
            if stop is not None and stop(r):
                return out, True
        return out, False


__all__ = ["Feeds"]
