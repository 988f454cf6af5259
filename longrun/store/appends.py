"""Appending to a run's transcript and audit chains: one statement when the cached head is right.

Rules:

- an append hashes its row(s) on the head (count, hash) the store remembers for that chain and
  run (`StoreCore._chain_heads`, filled by the store's own appends, by `create_run` and by reads
  that return the head: `transcript`, `last_transcript_entry`, `audit`), and runs one statement
  in autocommit: `WITH upd AS (UPDATE runs SET <chain>_head = <new hash>, <chain>_count = <new
  count> WHERE run_id = ... AND <chain>_head = <guessed hash> AND <chain>_count = <guessed count>
  RETURNING run_id) INSERT INTO <chain table> ... SELECT ... FROM upd`. The rows are inserted only
  from the UPDATE's RETURNING row, so they and the move of the head commit together or not at all;
- the UPDATE decides: its row lock serializes the appenders of one run, and at READ COMMITTED
  its WHERE clause is re-checked against the row a concurrent winner committed, so of two racing
  appenders exactly one gets each number; the other's statement matches no row and writes
  nothing;
- a statement that writes nothing (the cache was empty or wrong, another writer appended first,
  the run does not exist) is followed by a read of the head (one statement; none means
  `RunNotFoundError`), a re-hash and another try. After `OPTIMISTIC_TRIES` lost tries (a run
  appended to by many writers at once) the append takes the head under `SELECT ... FOR NO KEY
  UPDATE` in a short transaction, where its statement cannot lose, so every append lands; if
  even that one writes nothing, the head on `runs` changed under the lock and a `StoreError`
  naming the chain says so;
- a wrong cache is safe because nothing is written on the guess alone: the row's `prev_hash` and
  number are the guess, and the statement inserts it only when they are the head stored on
  `runs` (which only appends move, in the same statement as the insert). Numbers stay dense and
  every row is chained on its predecessor, exactly as when appends read the head under a lock.

The payload each row's hash covers is defined in `longrun.store.chain`; JSON is sent as canonical
JSON text and stored in `json` columns verbatim, so the hash recomputes from what is read back.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

import psycopg

from longrun.errors import RunNotFoundError, StoreError
from longrun.models import utcnow
from longrun.store.core import StoreCore

OPTIMISTIC_TRIES = 4
"""Append statements tried on a guessed or freshly read head before the append locks the head."""

Build = Callable[[int, str, datetime], tuple[dict[str, Any], int, str]]
"""(head count, head hash, now) -> (the append statement's parameters, the new count, the new head
hash): the rows to append, numbered and hashed on that head."""


def head_sql(chain: str, *, locked: bool = False) -> str:
    """The statement that reads the head (count, hash) of `chain` from the run's row."""
    return (f"SELECT {chain}_count, {chain}_head FROM runs WHERE run_id = %(run_id)s"
            + (" FOR NO KEY UPDATE" if locked else ""))


class ChainAppendMixin(StoreCore):
    """The append loop shared by the transcript and the audit (see the module's rules)."""

    def _read_chain_head(self, c: psycopg.Connection, chain: str, run_id: str, *, locked: bool = False) -> tuple[int, str]:
        row = c.execute(head_sql(chain, locked=locked), {"run_id": run_id}).fetchone()
        if row is None:
            raise RunNotFoundError(run_id)
        count, digest = row
        return int(count), str(digest)

    @staticmethod
    def _try_append(c: psycopg.Connection, sql: str, build: Build, head: tuple[int, str]) -> tuple[int, str] | None:
        """Run the append statement on `head`; the new head when it wrote, else None."""
        params, count, digest = build(head[0], head[1], utcnow())
        return (count, digest) if c.execute(sql, params).fetchall() else None

    def _append_chained(self, what: str, chain: str, run_id: str, sql: str, build: Build) -> int:
        """Append what `build` makes to the run's `chain` with the statement `sql`.

        Returns:
            The chain's count before the append (the first new row is number count + 1).

        Raises:
            RunNotFoundError: no run has this id.
            StoreError: the head on `runs` moved while this append held its lock.
        """

        def run(c: psycopg.Connection) -> int:
            head = self._cached_chain_head(chain, run_id)
            for _ in range(OPTIMISTIC_TRIES):
                if head is None:
                    head = self._read_chain_head(c, chain, run_id)
                    self._remember_head(run_id, *head, chain)
                moved = self._try_append(c, sql, build, head)
                if moved is not None:
                    self._remember_head(run_id, *moved, chain, newer_only=True)
                    return head[0]
                # the guess was not the head (or another appender won this number): read it again
                self._forget_head(run_id, chain)
                head = None
            with c.transaction():
                head = self._read_chain_head(c, chain, run_id, locked=True)
                moved = self._try_append(c, sql, build, head)
            if moved is None:
                raise StoreError(
                    f"{what} on run {run_id}: the {chain} chain head on `runs` is not the one read under "
                    "this append's lock; run verify_chain"
                )
            self._remember_head(run_id, *moved, chain, newer_only=True)
            return head[0]

        return self._autocommit(what, run, run_id=run_id, chain=chain)
