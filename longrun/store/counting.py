"""Counting the statements a store sends, per Temporal activity: for the tests that pin how many
round trips a turn costs, and for the benchmark's statements-per-turn table.

Every statement of a store reaches the server through a psycopg cursor, whether it comes from the
autocommit hot path (`StoreCore._autocommit`) or from a SQLAlchemy session, so the count is taken
there: the engine's connections get a cursor class that counts each `execute`/`executemany` while
a `count_statements` block is open. The statement is attributed to the activity running on the
thread (`activity.info()`: activities run one per thread), or to none outside one. A session's
BEGIN and COMMIT (or ROLLBACK) are round trips too; each is counted as a statement.

Not for production: the count is a lock and a dict update per statement, and the connections
made for the block are thrown away when it ends.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import psycopg
from sqlalchemy import Engine, event
from temporalio import activity


@dataclass
class Invocation:
    """One activity invocation and the statements it sent, in order (first words of each)."""

    activity: str
    activity_id: str
    attempt: int
    statements: list[str] = field(default_factory=list)


@dataclass
class StatementCount:
    """What a `count_statements` block saw: every activity invocation in the order it first sent
    a statement, and the statements sent outside any activity."""

    invocations: list[Invocation] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)
    _by_key: dict[tuple[str, str, int], Invocation] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def total(self) -> int:
        return sum(len(i.statements) for i in self.invocations) + len(self.outside)

    def add(self, sql: str) -> None:
        words = " ".join(str(sql).split()[:3])
        with self._lock:
            if not activity.in_activity():
                self.outside.append(words)
                return
            info = activity.info()
            key = (info.workflow_run_id or "", info.activity_id, info.attempt)
            found = self._by_key.get(key)
            if found is None:
                name = info.activity_type.removeprefix("longrun.")
                found = self._by_key[key] = Invocation(name, info.activity_id, info.attempt)
                self.invocations.append(found)
            found.statements.append(words)


_active: list[StatementCount] = []


class _CountingCursor(psycopg.Cursor[Any]):
    def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
        for count in _active:
            count.add(query.as_string(self) if isinstance(query, psycopg.sql.Composable) else query)
        return super().execute(query, params, **kwargs)

    def executemany(self, query: Any, params_seq: Any, **kwargs: Any) -> None:
        for count in _active:
            count.add(query.as_string(self) if isinstance(query, psycopg.sql.Composable) else query)
        super().executemany(query, params_seq, **kwargs)


@contextmanager
def count_statements(engine: Engine) -> Iterator[StatementCount]:
    """Count every statement sent on `engine` while the block runs (see the module docstring).

    The pool is emptied on entry and on exit, so every connection of the block counts and none
    that counted outlives it."""

    def on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.cursor_factory = _CountingCursor

    def on_begin(_conn: Any) -> None:
        for count in _active:
            count.add("BEGIN")

    def on_end(_conn: Any) -> None:
        for count in _active:
            count.add("COMMIT")

    count = StatementCount()
    engine.dispose()
    event.listen(engine, "connect", on_connect)
    event.listen(engine, "begin", on_begin)
    event.listen(engine, "commit", on_end)
    event.listen(engine, "rollback", on_end)
    _active.append(count)
    try:
        yield count
    finally:
        _active.remove(count)
        event.remove(engine, "connect", on_connect)
        event.remove(engine, "begin", on_begin)
        event.remove(engine, "commit", on_end)
        event.remove(engine, "rollback", on_end)
        engine.dispose()
