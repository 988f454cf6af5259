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

Head = tuple[int, str]
"""A chain's head: (count, hash of its last row)."""

Build = Callable[[int, str, datetime], tuple[dict[str, Any], int, str]]
"""(head count, head hash, now) -> (the append statement's parameters, the new count, the new head
hash): the rows to append, numbered and hashed on that head."""

JointBuild = Callable[[tuple[Head, ...], datetime], tuple[dict[str, Any], tuple[Head, ...]]]
"""(the heads of the chains, in the order named, now) -> (the statement's parameters, the new
heads): rows appended to several chains by one statement (`_append_joint`)."""


def head_sql(chain: str | tuple[str, ...], *, locked: bool = False) -> str:
    """The statement that reads the head (count, hash) of each chain named from the run's row."""
    chains = (chain,) if isinstance(chain, str) else chain
    columns = ", ".join(f"{c}_count, {c}_head" for c in chains)
    return f"SELECT {columns} FROM runs WHERE run_id = %(run_id)s" + (" FOR NO KEY UPDATE" if locked else "")


class ChainAppendMixin(StoreCore):
    """The append loop shared by the transcript and the audit (see the module's rules)."""

    def _read_chain_heads(self, c: psycopg.Connection, chains: tuple[str, ...], run_id: str, *,
                          locked: bool = False) -> tuple[Head, ...]:
        row = c.execute(head_sql(chains, locked=locked), {"run_id": run_id}).fetchone()
        if row is None:
            raise RunNotFoundError(run_id)
        return tuple((int(row[2 * i]), str(row[2 * i + 1])) for i in range(len(chains)))

    def _append_chained(self, what: str, chain: str, run_id: str, sql: str, build: Build) -> int:
        """Append what `build` makes to the run's `chain` with the statement `sql`.

        Returns:
            The chain's count before the append (the first new row is number count + 1).

        Raises:
            RunNotFoundError: no run has this id.
            StoreError: the head on `runs` moved while this append held its lock.
        """

        def joint(heads: tuple[Head, ...], now: datetime) -> tuple[dict[str, Any], tuple[Head, ...]]:
            params, count, digest = build(heads[0][0], heads[0][1], now)
            return params, ((count, digest),)

        return self._append_joint(what, (chain,), run_id, sql, joint)[0]

    def _append_joint(self, what: str, chains: tuple[str, ...], run_id: str, sql: str, build: JointBuild, *,
                      landed: list[Any] | None = None) -> tuple[int, ...]:
        """Append what `build` makes to each of the run's `chains` with the one statement `sql`,
        whose single UPDATE of the `runs` row checks and moves every chain's head: the rows of all
        chains land together or none do (a model's answer and its audit events, say). `landed`
        gets the rows the statement that landed returned.

        Returns:
            Each chain's count before the append, in the order of `chains`.

        Raises:
            RunNotFoundError: no run has this id.
            StoreError: a head on `runs` moved while this append held its lock.
        """

        def remember(heads: tuple[Head, ...]) -> None:
            for chain, head in zip(chains, heads, strict=True):
                self._remember_head(run_id, *head, chain, newer_only=True)

        def attempt(c: psycopg.Connection, heads: tuple[Head, ...]) -> bool:
            params, moved = build(heads, utcnow())
            rows = c.execute(sql, params).fetchall()
            if not rows:
                return False
            if landed is not None:
                landed[:] = rows
            remember(moved)
            return True

        def run(c: psycopg.Connection) -> tuple[int, ...]:
            cached = [self._cached_chain_head(chain, run_id) for chain in chains]
            heads = None if None in cached else tuple(h for h in cached if h is not None)
            for _ in range(OPTIMISTIC_TRIES):
                if heads is None:
                    heads = self._read_chain_heads(c, chains, run_id)
                    remember(heads)
                if attempt(c, heads):
                    return tuple(h[0] for h in heads)
                # a guess was not the head (or another appender won this number): read them again
                for chain in chains:
                    self._forget_head(run_id, chain)
                heads = None
            with c.transaction():
                heads = self._read_chain_heads(c, chains, run_id, locked=True)
                landed = attempt(c, heads)
            if not landed:
                raise StoreError(
                    f"{what} on run {run_id}: the {' and '.join(chains)} chain head on `runs` is not the one "
                    "read under this append's lock; run verify_chain"
                )
            return tuple(h[0] for h in heads)

        try:
            return self._autocommit(what, run, run_id=run_id, chain=chains[0])
        except BaseException:
            for chain in chains[1:]:  # `_autocommit` drops the first chain's cached head on a doubt
                self._forget_head(run_id, chain)
            raise
