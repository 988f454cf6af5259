"""Parsed audit logs of the runs the console shows, kept between requests.

A run page, the run list and the inbox all need a run's whole audit log (usage, the pending
approval, the context meter). Reading and parsing it whole on every request made each request
cost as much as the run was long. The log is append-only and numbered, so a cached copy stays
right and only grows: each read asks Postgres for the rows after the last one held (one indexed
query, usually empty). At most `max_runs` logs are kept, least recently used first out.

Audit verification (`/audit`) never uses this cache: it reads and checks the rows themselves.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from longrun.store import AuditRecord, Store

PAGE = 1_000


class AuditCache:
    def __init__(self, store: Store, *, max_runs: int = 64) -> None:
        self.store = store
        self.max_runs = max_runs
        self._logs: OrderedDict[str, list[AuditRecord]] = OrderedDict()
        self._lock = threading.Lock()

    def records(self, run_id: str) -> list[AuditRecord]:
        """The run's audit records, oldest first, up to date as of this call.

        Raises:
            RunNotFoundError: no such run."""
        with self._lock:
            held = self._logs.get(run_id, [])
        fresh: list[AuditRecord] = []
        after = held[-1].seq if held else 0
        while True:
            page = self.store.audit_page(run_id, after_seq=after, limit=PAGE)
            fresh += page
            if len(page) < PAGE:
                break
            after = page[-1].seq
        log = held + fresh if fresh else held
        with self._lock:
            current = self._logs.get(run_id, [])
            if len(current) > len(log):  # another request got further meanwhile
                log = current
            self._logs[run_id] = log
            self._logs.move_to_end(run_id)
            while len(self._logs) > self.max_runs:
                self._logs.popitem(last=False)
        return log


__all__ = ["AuditCache"]
