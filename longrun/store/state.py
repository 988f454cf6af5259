"""Task state: reading the head, and changing it only by compare-and-set.

Rules:

- the task state changes only by compare-and-set: one `UPDATE ... WHERE state_version =
  :expected` whose rowcount decides, so exactly one writer wins each version (correct at READ
  COMMITTED, where the WHERE clause is re-checked against the row the winner committed);
- a compare-and-set is one statement in its own transaction (see `_CAS_SQL`): the head update, the
  history row and the move of the chain head on `runs` commit together or not at all. The history
  row's hash is computed here, as for every chain, on the `prev_hash` the store last saw for that
  version; the statement writes only if `runs.state_head` still is that hash, so a wrong guess
  writes nothing and is corrected from the database;
- what a write closes (a settled effect, a used approval, an ended scope) leaves the state and is
  inserted into `closed_items` by the same statement (`longrun.store.closing`);
- reading the head (`load_state`, `head_version`) is one statement, and tells the store the head's
  chain hash for the next compare-and-set.

State v1 is not written here: `create_run` writes it with the run (see `longrun.store.runs`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg
from pydantic import ValidationError
from sqlalchemy import select
from sqlalchemy.orm import Session

from longrun.errors import RunNotFoundError, StaleStateError, StoreError
from longrun.models import TaskState, canonical_json, chain_hash, utcnow
from longrun.models.state import MAX_TEXT
from longrun.store.chain import state_version_payload
from longrun.store.closing import SealedItem, seal, split_closed
from longrun.store.core import (
    MAX_STATE_BYTES,
    InvalidInputError,
    StoreCore,
    check_int,
    check_run_id,
    check_text,
    check_text_size,
    fields,
    validate,
)
from longrun.store.records import StateVersionRecord
from longrun.store.tables import ACTOR_MAX, TaskStateVersionRow

_CAS_SQL = """
WITH upd AS (
    UPDATE task_states
    SET state_version = %(version)s, state = %(state)s::jsonb, updated_at = %(now)s
    WHERE run_id = %(run_id)s AND state_version = %(expected)s
      AND EXISTS (SELECT FROM runs WHERE runs.run_id = %(run_id)s AND runs.state_head = %(prev)s)
    RETURNING run_id
), ins AS (
    INSERT INTO task_state_versions (run_id, version, state, actor, reason, created_at, prev_hash, hash)
    SELECT run_id, %(version)s, %(state)s::json, %(actor)s, %(reason)s, %(now)s, %(prev)s, %(hash)s FROM upd
)
UPDATE runs SET state_head = %(hash)s, state_count = %(version)s
FROM upd WHERE runs.run_id = upd.run_id
RETURNING runs.run_id
"""
"""One compare-and-set, one round trip, one transaction (autocommit): the `UPDATE ... WHERE
state_version = %(expected)s` decides the winner (its row lock serializes writers of one run, and at
READ COMMITTED the WHERE is re-checked against the row a concurrent winner committed); the history
row and the chain head on `runs` are written only from its RETURNING row. `prev` is the hash the
history row is chained on: the statement writes nothing unless it is the head stored on `runs`
(which only a compare-and-set moves, together with `state_version`, so the head seen in the
statement's snapshot is the head of `expected`). The state text is canonical JSON: `json` keeps it
verbatim for the hashed history row, `jsonb` parses it for the head."""

_CLOSE_SQL = _CAS_SQL.replace("\nUPDATE runs SET", """, cls AS (
    INSERT INTO closed_items (run_id, seq, kind, item_id, action_hash, call_ref, item, state_version, created_at,
                              prev_hash, hash)
    SELECT upd.run_id, x.seq, x.kind, x.item_id, x.action_hash, x.call_ref, x.item::json, %(version)s, %(now)s,
           x.prev_hash, x.hash
    FROM upd, unnest(%(c_seq)s::int[], %(c_kind)s::text[], %(c_id)s::text[], %(c_ahash)s::text[], %(c_ref)s::text[],
                     %(c_item)s::text[], %(c_prev)s::text[], %(c_hash)s::text[])
         AS x(seq, kind, item_id, action_hash, call_ref, item, prev_hash, hash)
)
UPDATE runs SET""")
"""`_CAS_SQL` for a write that closes items: their `closed_items` rows are inserted by the same
statement, from the same RETURNING row, so the state that no longer holds them and the rows that
do commit together or not at all (`longrun.store.closing`)."""

_HEAD_SQL = (
    "SELECT t.state_version, r.state_head FROM task_states t JOIN runs r ON r.run_id = t.run_id "
    "WHERE t.run_id = %(run_id)s"
)
"""The head version and its chain hash, read in one snapshot (they are committed together)."""

_LOAD_SQL = (
    "SELECT t.state, t.state_version, r.state_head FROM task_states t JOIN runs r ON r.run_id = t.run_id "
    "WHERE t.run_id = %(run_id)s"
)


class StateMixin(StoreCore):
    """The head state and its history; every change is a compare-and-set."""

    @staticmethod
    def _parse_state(run_id: str, data: Any, where: str) -> TaskState:
        try:
            return TaskState.model_validate(data)
        except ValidationError as exc:
            raise StoreError(f"stored {where} of run {run_id} does not parse: {fields(exc)}") from exc

    def load_state(self, run_id: str) -> TaskState:
        """The head state of a run.

        Raises:
            RunNotFoundError: no run has this id.
        """

        def tx(c: psycopg.Connection) -> TaskState:
            # one statement, one snapshot: the head and its chain hash were committed together
            row = c.execute(_LOAD_SQL, {"run_id": run_id}).fetchone()
            if row is None:
                raise RunNotFoundError(run_id)
            data, version, digest = row
            state = self._parse_state(run_id, data, "head state")
            self._remember_head(run_id, version, digest)
            return state

        return self._autocommit("load_state", tx)

    def head_version(self, run_id: str) -> int:
        """The head `state_version` of a run (cheaper than `load_state`; one statement, which also
        tells the store the head's chain hash)."""

        def read(c: psycopg.Connection) -> int:
            head = c.execute(_HEAD_SQL, {"run_id": run_id}).fetchone()
            if head is None:
                raise RunNotFoundError(run_id)
            version, digest = head
            self._remember_head(run_id, version, digest)  # the hash a compare-and-set on it chains on
            return int(version)

        return self._autocommit("head_version", read)

    def compare_and_set(
        self, run_id: str, expected_version: int, new_state: TaskState, actor: str, reason: str
    ) -> int:
        """Write `new_state` as version `expected_version + 1` if the head is still
        `expected_version`; append the version to the hash-chained history in the same transaction.

        The stored state gets `state_version = expected_version + 1` and `updated_at = now`,
        whatever `new_state` carried. `new_state` may also be a mapping or JSON text.

        Returns:
            The new version.

        Raises:
            StaleStateError: another writer moved the head first (names expected and actual).
            InvalidInputError: `new_state` does not validate, is for another run, or is too big.
            RunNotFoundError: no run has this id.
        """
        return self._cas(run_id, expected_version, new_state, actor, reason).state_version

    def _cas(self, run_id: str, expected_version: int, new_state: Any, actor: str, reason: str) -> TaskState:
        check_run_id("run_id", run_id)
        check_int("expected_version", expected_version, minimum=1)
        check_text("actor", actor, ACTOR_MAX, nonempty=True)
        check_text("reason", reason, MAX_TEXT)
        state: TaskState = validate(TaskState, new_state, "new state")
        if state.run_id != run_id:
            raise InvalidInputError(f"run_id: the new state is for run {state.run_id!r}, not {run_id!r}")

        def tx(c: psycopg.Connection) -> TaskState:
            now = utcnow()
            version = expected_version + 1
            open_state, closing = split_closed(state, now)
            sealed: list[SealedItem] = []
            if closing:
                open_state, sealed = seal(run_id, open_state, closing, version, now)
            stored = open_state.model_copy(update={"state_version": version, "updated_at": now})
            params = {} if not sealed else {
                "c_seq": [x.seq for x in sealed], "c_kind": [x.item.kind for x in sealed],
                "c_id": [x.item.item_id for x in sealed], "c_ahash": [x.item.action_hash for x in sealed],
                "c_ref": [x.item.call_ref for x in sealed], "c_item": [x.item_text for x in sealed],
                "c_prev": [x.prev_hash for x in sealed], "c_hash": [x.hash for x in sealed],
            }
            payload = stored.model_dump(mode="json")
            state_text = canonical_json(payload)
            check_text_size("state", state_text, MAX_STATE_BYTES, "keep large content in artifacts and reference it")
            prev = self._cached_head(run_id, expected_version)
            for _ in range(3):
                if prev is None:
                    head = c.execute(_HEAD_SQL, {"run_id": run_id}).fetchone()
                    if head is None:
                        raise RunNotFoundError(run_id)
                    actual, prev = head
                    self._remember_head(run_id, actual, prev)
                    if actual != expected_version:
                        raise StaleStateError(run_id, expected_version, actual)
                digest = chain_hash(prev, state_version_payload(run_id, version, payload, actor, reason, now))
                won = c.execute(_CLOSE_SQL if sealed else _CAS_SQL, {
                    "run_id": run_id, "expected": expected_version, "version": version, "state": state_text,
                    "now": now, "actor": actor, "reason": reason, "prev": prev, "hash": digest, **params,
                }).fetchone()
                if won is not None:
                    self._remember_head(run_id, version, digest)
                    return stored
                # lost the race, or `prev` was not the head's hash: read the head (a new snapshot,
                # so a winner that committed meanwhile shows) and decide
                prev = None
            raise StoreError(
                f"compare_and_set on run {run_id} at version {expected_version}: the chain head on `runs` "
                "does not stay the hash read for that version; run verify_chain"
            )

        return self._autocommit("compare_and_set", tx, run_id=run_id)

    def update_state(
        self,
        run_id: str,
        expected_version: int,
        mutate: Callable[[TaskState], TaskState | None],
        actor: str,
        reason: str,
        *,
        head: TaskState | None = None,
    ) -> TaskState:
        """Load the head, apply `mutate` to a copy, compare-and-set it.

        `mutate` may return the new state or change the copy in place and return None. `head` is
        the state the caller already holds (read or written by it): when it is version
        `expected_version` it is used instead of loading the head again (a version is one state:
        the compare-and-set still decides whether it is the head).

        Returns:
            The stored new state (version `expected_version + 1`).

        Raises:
            StaleStateError: the head is not `expected_version` (before or during the write).
        """
        if head is None or head.run_id != run_id or head.state_version != expected_version:
            head = self.load_state(run_id)
        if head.state_version != expected_version:
            raise StaleStateError(run_id, expected_version, head.state_version)
        draft = head.model_copy(deep=True)
        result = mutate(draft)
        return self._cas(run_id, expected_version, draft if result is None else result, actor, reason)

    def reapply_on_head(
        self,
        run_id: str,
        mutate: Callable[[TaskState], TaskState | None],
        actor: str,
        reason: str,
        *,
        attempts: int = 8,
        head: TaskState | None = None,
    ) -> TaskState:
        """Apply `mutate` to whatever the head is, compare-and-set, and on a lost race reload and
        apply it again (up to `attempts` times). The first attempt applies it to `head` when
        given (the state the caller holds: no read; a head that moved meanwhile loses the
        compare-and-set like any lost race, and the next attempt reloads).

        Only for writers whose change must land on top of whatever moved meanwhile, because it
        does not depend on what the state said: a human's approval or instruction, the workflow
        asking for a human, and the effects ledger counting an attempt or settling an effect
        (what happened at the target is a fact, whatever the state says now). Writers whose change
        depends on a version they saw (an effect's intent on the version the gate checked, the
        model's state tools) use `update_state` / `compare_and_set`, and a moved head is their
        answer, not something to write over.

        Raises:
            StaleStateError: every attempt lost its race.
        """
        last: StaleStateError | None = None
        known = head if head is not None and head.run_id == run_id else None
        for _ in range(max(1, attempts)):
            head, known = known or self.load_state(run_id), None
            draft = head.model_copy(deep=True)
            result = mutate(draft)
            try:
                return self._cas(run_id, head.state_version, draft if result is None else result, actor, reason)
            except StaleStateError as exc:
                last = exc
        assert last is not None
        raise last

    def state_history(self, run_id: str) -> list[StateVersionRecord]:
        """Every version of the run's state, oldest first."""

        def tx(s: Session) -> list[StateVersionRecord]:
            self._require_run(s, run_id)
            rows = s.scalars(
                select(TaskStateVersionRow).where(TaskStateVersionRow.run_id == run_id)
                .order_by(TaskStateVersionRow.version)
            )
            return [
                StateVersionRecord(
                    version=r.version, state=self._parse_state(run_id, r.state, f"state version {r.version}"),
                    actor=r.actor, reason=r.reason, created_at=r.created_at, prev_hash=r.prev_hash, hash=r.hash,
                )
                for r in rows
            ]

        return self._tx("state_history", tx)
