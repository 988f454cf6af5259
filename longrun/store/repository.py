"""`Store`: the one gateway to Postgres for runs, task state, transcript, artifacts, projections
and the audit log.

Rules every method follows:

- each public method is its own transaction; SQLSTATE 40001 (serialization failure) and 40P01
  (deadlock) are retried a few times with jittered backoff, anything else is translated into the
  `longrun.errors` hierarchy at this boundary;
- the task state changes only by compare-and-set: one `UPDATE ... WHERE state_version =
  :expected` whose rowcount decides, so exactly one writer wins each version (correct at READ
  COMMITTED, where the WHERE clause is re-checked against the row the winner committed);
- appends to a run's transcript and audit chains lock the `runs` row `FOR UPDATE` while they
  compute the next number and `prev_hash`, and move the head stored there (see
  `longrun.store.tables` for where heads live);
- a compare-and-set is one statement in its own transaction (see `_CAS_SQL`): the head update, the
  history row and the move of the chain head on `runs` commit together or not at all. The history
  row's hash is computed here, as for every chain, on the `prev_hash` the store last saw for that
  version; the statement writes only if `runs.state_head` still is that hash, so a wrong guess
  writes nothing and is corrected from the database;
- input is validated before anything is written; a bad value raises `InvalidInputError` naming
  the field, and nothing is written.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from typing import Any, TypeVar

import psycopg
from pydantic import BaseModel, ValidationError
from sqlalchemy import Engine, func, insert, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from longrun.errors import (
    AppendOnlyViolation,
    RunNotFoundError,
    StackNotRunning,
    StaleStateError,
    StoreError,
)
from longrun.models import (
    AuditEvent,
    Message,
    Projection,
    RunSpec,
    RunStatus,
    TaskState,
    Usage,
    audit_event_adapter,
    canonical_json,
    chain_hash,
    sha256_hex,
    utcnow,
)
from longrun.models.audit import RunStarted
from longrun.models.context import CompactionReport
from longrun.models.state import MAX_TEXT
from longrun.store.chain import (
    ChainRow,
    audit_payload,
    check_chain,
    state_version_payload,
    transcript_payload,
)
from longrun.redact import Redactor, default_redactor
from longrun.store.engine import make_engine
from longrun.store.records import AuditRecord, ChainVerdict, RunRecord, StateVersionRecord, TranscriptRecord
from longrun.store.tables import (
    ACTOR_MAX,
    APPEND_ONLY_SQLSTATE,
    RUN_ID_MAX,
    ArtifactRow,
    AuditEventRow,
    ProjectionRow,
    RunRow,
    TaskStateRow,
    TaskStateVersionRow,
    TranscriptEntryRow,
)

T = TypeVar("T")

_RUNS = RunRow.__table__
_TASK_STATES = TaskStateRow.__table__

RETRYABLE_SQLSTATES = frozenset({"40001", "40P01"})
MAX_ATTEMPTS = 5

MAX_CACHED_HEADS = 10_000
"""Runs whose state chain head (version, hash) a `Store` remembers between compare-and-sets."""

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

_HEAD_SQL = (
    "SELECT t.state_version, r.state_head FROM task_states t JOIN runs r ON r.run_id = t.run_id "
    "WHERE t.run_id = %(run_id)s"
)
"""The head version and its chain hash, read in one snapshot (they are committed together)."""

_LOAD_SQL = (
    "SELECT t.state, t.state_version, r.state_head FROM task_states t JOIN runs r ON r.run_id = t.run_id "
    "WHERE t.run_id = %(run_id)s"
)

MAX_STATE_BYTES = 4_000_000
"""Largest serialized task state accepted: state is a record, big content belongs in artifacts."""
MAX_MESSAGE_BYTES = 8_000_000
"""Largest serialized transcript message (tool output beyond this belongs in an artifact)."""
MAX_EVENT_BYTES = 1_000_000
MAX_ARTIFACT_BYTES = 256 * 1024 * 1024
MAX_CALIBRATION_BYTES = 100_000


class InvalidInputError(StoreError, ValueError):
    """The store refused a value before writing anything; the message names the field."""


class StaleProjectionError(StaleStateError):
    """A projection was offered whose version is not newer than the stored newest one."""

    def __init__(self, run_id: str, version: int, newest: int) -> None:
        self.run_id = run_id
        self.expected = version
        self.actual = newest
        StoreError.__init__(
            self,
            f"stale projection for run {run_id}: version {version} offered but version {newest} is already "
            "stored; a projection is never written over a newer one, so this compaction is discarded",
        )


def _fields(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:6]:
        loc = ".".join(str(p) for p in err.get("loc", ())) or "(value)"
        parts.append(f"{loc}: {err.get('msg', 'invalid')}")
    more = exc.error_count() - len(parts)
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


def _validate(model: type[BaseModel], value: Any, what: str) -> Any:
    """Parse `value` (model instance, mapping or JSON text) as `model`, re-validating instances so
    that an object built with `model_construct` or mutated behind pydantic's back is still checked."""
    try:
        if isinstance(value, (str, bytes, bytearray)):
            return model.model_validate_json(value)
        if isinstance(value, BaseModel):
            value = value.model_dump(mode="json")
        if not isinstance(value, Mapping):
            raise InvalidInputError(f"{what}: expected a {model.__name__}, got {type(value).__name__}")
        return model.model_validate(dict(value))
    except ValidationError as exc:
        raise InvalidInputError(f"invalid {what}: {_fields(exc)}") from exc


def _check_int(name: str, value: Any, *, minimum: int, optional: bool = False) -> None:
    if value is None and optional:
        return
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidInputError(f"{name}: expected an integer, got {type(value).__name__} {value!r:.60}")
    if value < minimum:
        raise InvalidInputError(f"{name}: must be >= {minimum}, got {value}")


def _check_text(name: str, value: Any, limit: int, *, nonempty: bool = False) -> None:
    if not isinstance(value, str):
        raise InvalidInputError(f"{name}: expected a string, got {type(value).__name__}")
    if nonempty and not value.strip():
        raise InvalidInputError(f"{name}: must not be empty")
    if len(value) > limit:
        raise InvalidInputError(f"{name}: {len(value)} characters is over the limit of {limit}")


def _check_run_id(name: str, value: Any) -> None:
    _check_text(name, value, RUN_ID_MAX, nonempty=True)


def _check_size(name: str, payload: Any, limit: int, hint: str) -> None:
    _check_text_size(name, canonical_json(payload), limit, hint)


def _check_text_size(name: str, serialized: str, limit: int, hint: str) -> None:
    size = len(serialized.encode("utf-8"))
    if size > limit:
        raise InvalidInputError(f"{name}: {size:,} bytes serialized is over the limit of {limit:,} bytes; {hint}")


def _sqlstate(exc: DBAPIError) -> str | None:
    return getattr(exc.orig, "sqlstate", None)


def _db_message(exc: DBAPIError) -> str:
    diag = getattr(exc.orig, "diag", None)
    primary = getattr(diag, "message_primary", None) or str(exc.orig).splitlines()[0]
    hint = getattr(diag, "message_hint", None)
    return f"{primary} ({hint})" if hint else primary


def translate_db_error(exc: DBAPIError, what: str) -> Exception:
    """Map a database error to the longrun hierarchy (the store's boundary)."""
    code = _sqlstate(exc)
    message = _db_message(exc)
    if code == APPEND_ONLY_SQLSTATE:
        return AppendOnlyViolation(f"{what} refused: {message}")
    if isinstance(exc, OperationalError) and (code is None or code.startswith("08")):
        return StackNotRunning(
            f"PostgreSQL does not answer ({message}); start it with `longrun dev up` "
            "or point LONGRUN_DATABASE_URL at a running server"
        )
    if code == "42P01":
        return StoreError(f"{what} failed: {message}; the database is not migrated: run `longrun dev up` or migrate()")
    return StoreError(f"{what} failed: {message} (SQLSTATE {code})")


class Store:
    """Repository over one PostgreSQL database (see the module docstring for its rules).

    Thread-safe: share one `Store` per process; each call checks a connection out of the pool.
    """

    def __init__(self, engine: Engine, *, owns_engine: bool = False, redactor: Redactor | None = None) -> None:
        self.engine = engine
        self._owns_engine = owns_engine
        self._sessions = sessionmaker(engine, expire_on_commit=False)
        self.redactor = redactor or default_redactor()
        """Applied to every text the store records for a human or a model (the run's objective and
        constraints, transcript messages, projections, audit events): whatever path a secret took to
        get here, it is stored as `[REDACTED:<kind>]` (see longrun.redact)."""
        self._heads: dict[str, tuple[int, str]] = {}
        """run id -> (state version, its chain hash) as last committed or read by this store: the
        `prev_hash` a compare-and-set chains on without reading it first. Only a hint: the CAS
        statement checks it against `runs.state_head` and writes nothing when it is wrong."""
        self._heads_lock = threading.Lock()

    def _redact_message(self, content: dict[str, Any]) -> dict[str, Any]:
        """A message's JSON with every string redacted, except thinking blocks, which the provider
        needs back byte for byte (their signature covers them)."""
        blocks = content.get("content")
        if not isinstance(blocks, list):
            return self.redactor.redact_json(content)
        kept = [b if isinstance(b, dict) and b.get("type") in ("thinking", "redacted_thinking")
                else self.redactor.redact_json(b) for b in blocks]
        return {**{k: self.redactor.redact_json(v) for k, v in content.items() if k != "content"}, "content": kept}

    @classmethod
    def from_url(cls, url: str, **engine_kwargs: Any) -> "Store":
        """A store on its own engine (closed by `close()`)."""
        return cls(make_engine(url, **engine_kwargs), owns_engine=True)

    def close(self) -> None:
        """Dispose of the engine's connections when this store created the engine."""
        if self._owns_engine:
            self.engine.dispose()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ transactions

    def _tx(self, what: str, fn: Callable[[Session], T]) -> T:
        for attempt in range(1, MAX_ATTEMPTS + 1):
            try:
                with self._sessions() as session, session.begin():
                    return fn(session)
            except DBAPIError as exc:
                if _sqlstate(exc) in RETRYABLE_SQLSTATES and attempt < MAX_ATTEMPTS:
                    time.sleep(random.uniform(0, 0.02 * 2**attempt))
                    continue
                raise translate_db_error(exc, what) from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def _autocommit(self, what: str, fn: Callable[[psycopg.Connection], T], *, run_id: str | None = None) -> T:
        """`fn` on a pooled psycopg connection in autocommit mode: each statement is its own
        transaction and one round trip (no BEGIN/COMMIT, no SQLAlchemy layers: this is the hot path
        of compare-and-set). For work whose statements are each complete on their own. Retried
        like `_tx`; on a database or unexpected error the cached chain head of `run_id` is dropped."""
        for attempt in range(1, MAX_ATTEMPTS + 1):
            try:
                return self._on_driver_connection(fn)
            except DBAPIError as exc:
                if run_id is not None:
                    self._forget_head(run_id)
                if _sqlstate(exc) in RETRYABLE_SQLSTATES and attempt < MAX_ATTEMPTS:
                    time.sleep(random.uniform(0, 0.02 * 2**attempt))
                    continue
                raise translate_db_error(exc, what) from exc
            except StoreError:
                raise  # an answer (stale, not found, refused input), not a doubt about the cached head
            except BaseException:
                if run_id is not None:
                    self._forget_head(run_id)
                raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _on_driver_connection(self, fn: Callable[[psycopg.Connection], T]) -> T:
        """Check a connection out of the engine's pool (pre-pinged as every checkout), run `fn` on
        its psycopg connection in autocommit, and give it back in the pool's default mode. psycopg
        errors are wrapped as SQLAlchemy's `DBAPIError` (as the engine would), and a connection the
        dialect calls disconnected is invalidated."""
        fairy = self.engine.raw_connection()
        conn = fairy.driver_connection
        assert isinstance(conn, psycopg.Connection)
        try:
            conn.autocommit = True
            return fn(conn)
        except psycopg.Error as exc:
            disconnected = self.engine.dialect.is_disconnect(exc, conn, None)
            if disconnected:
                fairy.invalidate(exc)
            raise DBAPIError.instance(None, None, exc, psycopg.Error, hide_parameters=True,
                                      connection_invalidated=disconnected, dialect=self.engine.dialect) from exc
        finally:
            if fairy.is_valid:
                try:
                    conn.autocommit = False
                except psycopg.Error as exc:
                    fairy.invalidate(exc)
            fairy.close()

    def _remember_head(self, run_id: str, version: int, digest: str) -> None:
        with self._heads_lock:
            self._heads.pop(run_id, None)
            self._heads[run_id] = (version, digest)
            if len(self._heads) > MAX_CACHED_HEADS:
                del self._heads[next(iter(self._heads))]  # the least recently written

    def _forget_head(self, run_id: str) -> None:
        with self._heads_lock:
            self._heads.pop(run_id, None)

    def _cached_head(self, run_id: str, version: int) -> str | None:
        """The chain hash of `version` of the run, if this store remembers it."""
        head = self._heads.get(run_id)
        return head[1] if head is not None and head[0] == version else None

    @contextmanager
    def transaction(self, what: str = "statement") -> Iterator[Session]:
        """A session in one transaction, with database errors translated (no retry: the body
        cannot be replayed). For maintenance and tests; the repository methods cover the app."""
        try:
            with self._sessions() as session, session.begin():
                yield session
        except DBAPIError as exc:
            raise translate_db_error(exc, what) from exc

    @staticmethod
    def _require_run(session: Session, run_id: str) -> None:
        if session.scalar(select(RunRow.run_id).where(RunRow.run_id == run_id)) is None:
            raise RunNotFoundError(run_id)

    @staticmethod
    def _lock_run(session: Session, run_id: str) -> Any:
        """Lock the run row for an append and return its chain heads (a Core row: cheap on the
        hot path of compare-and-set)."""
        t = _RUNS
        row = session.execute(
            select(t.c.run_id, t.c.state_head, t.c.state_count, t.c.transcript_head, t.c.transcript_count,
                   t.c.audit_head, t.c.audit_count)
            .where(t.c.run_id == run_id).with_for_update()
        ).one_or_none()
        if row is None:
            raise RunNotFoundError(run_id)
        return row

    @staticmethod
    def _move_head(session: Session, run_id: str, chain: str, digest: str, count: int) -> None:
        session.execute(
            update(_RUNS).where(_RUNS.c.run_id == run_id).values({f"{chain}_head": digest, f"{chain}_count": count})
        )

    # ------------------------------------------------------------------ runs

    def create_run(
        self, run_id: str, spec: RunSpec, *, parent_run_id: str | None = None, actor: str = "operator"
    ) -> TaskState:
        """Create a run: its row, head state v1 (objective and constraints from the spec), the
        first state version and a `RunStarted` audit event, in one transaction.

        Returns:
            The stored state v1.

        Raises:
            InvalidInputError: bad run id, spec or actor (nothing written).
            StoreError: a run with this id already exists.
            RunNotFoundError: `parent_run_id` names no run.
        """
        _check_run_id("run_id", run_id)
        if parent_run_id is not None:
            _check_run_id("parent_run_id", parent_run_id)
        _check_text("actor", actor, ACTOR_MAX, nonempty=True)
        spec = _validate(RunSpec, spec, "run spec")
        spec = spec.model_copy(update={"objective": self.redactor.redact(spec.objective),
                                       "constraints": [self.redactor.redact(c) for c in spec.constraints]})
        now = utcnow()
        state = _validate(
            TaskState,
            {"run_id": run_id, "state_version": 1, "objective": spec.objective,
             "constraints": list(spec.constraints), "updated_at": now},
            "initial state",
        )
        state_json = state.model_dump(mode="json")
        spec_json = spec.model_dump(mode="json")
        started = RunStarted(
            model=spec.model, objective=spec.objective, constraints=list(spec.constraints),
            workspace=spec.workspace, approvers=list(spec.approvers),
        )

        def tx(s: Session) -> None:
            if s.get(RunRow, run_id) is not None:
                raise StoreError(f"run {run_id!r} already exists: choose another run id")
            if parent_run_id is not None:
                self._require_run(s, parent_run_id)
            s.add(RunRow(run_id=run_id, spec=spec_json, model=spec.model, status=RunStatus.running.value,
                         reason="", parent_run_id=parent_run_id, created_at=now, updated_at=now))
            s.add(TaskStateRow(run_id=run_id, state_version=1, state=state_json, updated_at=now))
            try:
                s.flush()
            except IntegrityError as exc:
                if _sqlstate(exc) == "23505":
                    raise StoreError(f"run {run_id!r} already exists: choose another run id") from exc
                raise
            run = self._lock_run(s, run_id)
            self._append_state_version(s, run, 1, state_json, actor, "run created", now)
            self._append_audit(s, run, started, actor, now)

        self._tx("create_run", tx)
        return state

    @staticmethod
    def _run_record(row: RunRow) -> RunRecord:
        try:
            spec = RunSpec.model_validate(row.spec)
        except ValidationError as exc:
            raise StoreError(f"stored spec of run {row.run_id} does not parse: {_fields(exc)}") from exc
        return RunRecord(
            run_id=row.run_id, spec=spec, model=row.model, status=row.status, reason=row.reason,
            parent_run_id=row.parent_run_id, created_at=row.created_at, updated_at=row.updated_at,
        )

    def get_run(self, run_id: str) -> RunRecord:
        """Raises:
        RunNotFoundError: no run has this id."""

        def tx(s: Session) -> RunRecord:
            row = s.get(RunRow, run_id)
            if row is None:
                raise RunNotFoundError(run_id)
            return self._run_record(row)

        return self._tx("get_run", tx)

    def list_runs(self, limit: int = 50, parent_run_id: str | None = None) -> list[RunRecord]:
        """Newest runs first; only the children of `parent_run_id` when it is given."""
        _check_int("limit", limit, minimum=1)

        def tx(s: Session) -> list[RunRecord]:
            q = select(RunRow).order_by(RunRow.created_at.desc(), RunRow.run_id).limit(limit)
            if parent_run_id is not None:
                q = q.where(RunRow.parent_run_id == parent_run_id)
            return [self._run_record(r) for r in s.scalars(q)]

        return self._tx("list_runs", tx)

    def set_run_status(self, run_id: str, status: str | RunStatus, reason: str = "") -> None:
        """Record where a run stands (`running`, `paused`, `completed`, ...) and why.

        Raises:
            InvalidInputError: unknown status or oversized reason.
            RunNotFoundError: no run has this id.
        """
        try:
            value = RunStatus(status).value
        except ValueError:
            allowed = ", ".join(s.value for s in RunStatus)
            raise InvalidInputError(f"status: {status!r} is not one of {allowed}") from None
        _check_text("reason", reason, MAX_TEXT)

        def tx(s: Session) -> None:
            res = s.execute(
                update(RunRow).where(RunRow.run_id == run_id).values(status=value, reason=reason, updated_at=utcnow())
            )
            if res.rowcount != 1:  # type: ignore[attr-defined]
                raise RunNotFoundError(run_id)

        self._tx("set_run_status", tx)

    def load_spec(self, run_id: str) -> RunSpec:
        return self.get_run(run_id).spec

    def get_calibration(self, run_id: str) -> dict[str, Any]:
        """The run's token-estimator calibration (empty until first set)."""

        def tx(s: Session) -> dict[str, Any]:
            value = s.scalar(select(RunRow.calibration).where(RunRow.run_id == run_id))
            if value is None:
                raise RunNotFoundError(run_id)
            return dict(value)

        return self._tx("get_calibration", tx)

    def set_calibration(self, run_id: str, data: dict[str, Any]) -> None:
        """Replace the run's calibration data (a JSON object)."""
        if not isinstance(data, Mapping):
            raise InvalidInputError(f"calibration: expected a JSON object, got {type(data).__name__}")
        try:
            text = json.dumps(data, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(f"calibration: not JSON-serializable: {exc}") from exc
        if len(text) > MAX_CALIBRATION_BYTES:
            raise InvalidInputError(f"calibration: {len(text):,} bytes is over the limit of {MAX_CALIBRATION_BYTES:,}")
        value = json.loads(text)

        def tx(s: Session) -> None:
            res = s.execute(
                update(RunRow).where(RunRow.run_id == run_id).values(calibration=value, updated_at=utcnow())
            )
            if res.rowcount != 1:  # type: ignore[attr-defined]
                raise RunNotFoundError(run_id)

        self._tx("set_calibration", tx)

    # ------------------------------------------------------------------ task state

    @staticmethod
    def _parse_state(run_id: str, data: Any, where: str) -> TaskState:
        try:
            return TaskState.model_validate(data)
        except ValidationError as exc:
            raise StoreError(f"stored {where} of run {run_id} does not parse: {_fields(exc)}") from exc

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
        """The head `state_version` of a run (cheaper than `load_state`)."""

        def tx(s: Session) -> int:
            v = s.scalar(select(TaskStateRow.state_version).where(TaskStateRow.run_id == run_id))
            if v is None:
                raise RunNotFoundError(run_id)
            return v

        return self._tx("head_version", tx)

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
        _check_run_id("run_id", run_id)
        _check_int("expected_version", expected_version, minimum=1)
        _check_text("actor", actor, ACTOR_MAX, nonempty=True)
        _check_text("reason", reason, MAX_TEXT)
        state: TaskState = _validate(TaskState, new_state, "new state")
        if state.run_id != run_id:
            raise InvalidInputError(f"run_id: the new state is for run {state.run_id!r}, not {run_id!r}")

        def tx(c: psycopg.Connection) -> TaskState:
            now = utcnow()
            version = expected_version + 1
            stored = state.model_copy(update={"state_version": version, "updated_at": now})
            payload = stored.model_dump(mode="json")
            state_text = canonical_json(payload)
            _check_text_size("state", state_text, MAX_STATE_BYTES, "keep large content in artifacts and reference it")
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
                won = c.execute(_CAS_SQL, {
                    "run_id": run_id, "expected": expected_version, "version": version, "state": state_text,
                    "now": now, "actor": actor, "reason": reason, "prev": prev, "hash": digest,
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
    ) -> TaskState:
        """Load the head, apply `mutate` to a copy, compare-and-set it.

        `mutate` may return the new state or change the copy in place and return None.

        Returns:
            The stored new state (version `expected_version + 1`).

        Raises:
            StaleStateError: the head is not `expected_version` (before or during the write).
        """
        head = self.load_state(run_id)
        if head.state_version != expected_version:
            raise StaleStateError(run_id, expected_version, head.state_version)
        draft = head.model_copy(deep=True)
        result = mutate(draft)
        return self._cas(run_id, expected_version, draft if result is None else result, actor, reason)

    def update_head(
        self,
        run_id: str,
        mutate: Callable[[TaskState], TaskState | None],
        actor: str,
        reason: str,
        *,
        attempts: int = 8,
    ) -> TaskState:
        """Apply `mutate` to whatever the head is, compare-and-set, and on a lost race reload and
        apply it again (up to `attempts` times). For writers whose change must land on top of
        whatever moved meanwhile (a human's approval, the effects ledger), not for writers whose
        change depends on a version they saw (they use `compare_and_set` / `update_state`).

        Raises:
            StaleStateError: every attempt lost its race.
        """
        last: StaleStateError | None = None
        for _ in range(max(1, attempts)):
            head = self.load_state(run_id)
            draft = head.model_copy(deep=True)
            result = mutate(draft)
            try:
                return self._cas(run_id, head.state_version, draft if result is None else result, actor, reason)
            except StaleStateError as exc:
                last = exc
        assert last is not None
        raise last

    @staticmethod
    def _append_state_version(
        s: Session, run: Any, version: int, state_json: Any, actor: str, reason: str, now: datetime
    ) -> None:
        prev = run.state_head
        digest = chain_hash(prev, state_version_payload(run.run_id, version, state_json, actor, reason, now))
        s.execute(insert(TaskStateVersionRow.__table__).values(
            run_id=run.run_id, version=version, state=state_json, actor=actor, reason=reason, created_at=now,
            prev_hash=prev, hash=digest))
        Store._move_head(s, run.run_id, "state", digest, version)

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

    def ping(self) -> None:
        """Raise if the database does not answer (used before telling a user the stack runs)."""
        self._tx("ping", lambda s: s.execute(select(1)).scalar_one())

    # ------------------------------------------------------------------ transcript

    def last_transcript_entry(self, run_id: str) -> TranscriptRecord | None:
        """The newest transcript entry of a run, or None for an empty transcript. Activities use
        it to stay idempotent per turn (a retried model call or commit finds its own entry)."""

        def tx(s: Session) -> int | None:
            self._require_run(s, run_id)
            return s.scalar(select(func.max(TranscriptEntryRow.seq)).where(TranscriptEntryRow.run_id == run_id))

        last = self._tx("last_transcript_entry", tx)
        return None if not last else self.transcript(run_id, after_seq=last - 1, through_seq=last)[0]


    def append_transcript(
        self,
        run_id: str,
        message: Message,
        *,
        token_estimate: int,
        usage: Usage | None = None,
        turn: int | None = None,
    ) -> int:
        """Append one message to the run's transcript (kept in full, hash-chained).

        Returns:
            The entry's sequence number (1, 2, ... per run).

        Raises:
            InvalidInputError: bad message, token estimate, usage or turn (nothing written).
            RunNotFoundError: no run has this id.
        """
        msg: Message = _validate(Message, message, "transcript message")
        _check_int("token_estimate", token_estimate, minimum=0)
        _check_int("turn", turn, minimum=0, optional=True)
        usage_json = None if usage is None else _validate(Usage, usage, "usage").model_dump(mode="json")
        content = self._redact_message(msg.model_dump(mode="json"))
        _check_size("message", content, MAX_MESSAGE_BYTES, "store large tool output as an artifact and reference it")

        def tx(s: Session) -> int:
            run = self._lock_run(s, run_id)
            now = utcnow()
            seq = run.transcript_count + 1
            prev = run.transcript_head
            digest = chain_hash(
                prev, transcript_payload(run_id, seq, msg.role, content, token_estimate, usage_json, turn, now)
            )
            s.execute(insert(TranscriptEntryRow.__table__).values(
                run_id=run_id, seq=seq, role=msg.role, content=content, token_estimate=token_estimate,
                usage=usage_json, turn=turn, created_at=now, prev_hash=prev, hash=digest))
            self._move_head(s, run_id, "transcript", digest, seq)
            return seq

        return self._tx("append_transcript", tx)

    def transcript(self, run_id: str, *, after_seq: int = 0, through_seq: int | None = None) -> list[TranscriptRecord]:
        """Transcript entries with `after_seq < seq <= through_seq`, in order."""
        _check_int("after_seq", after_seq, minimum=0)
        _check_int("through_seq", through_seq, minimum=0, optional=True)

        def tx(s: Session) -> list[TranscriptRecord]:
            self._require_run(s, run_id)
            q = select(TranscriptEntryRow).where(
                TranscriptEntryRow.run_id == run_id, TranscriptEntryRow.seq > after_seq
            )
            if through_seq is not None:
                q = q.where(TranscriptEntryRow.seq <= through_seq)
            out = []
            for r in s.scalars(q.order_by(TranscriptEntryRow.seq)):
                try:
                    message = Message.model_validate(r.content)
                    usage = None if r.usage is None else Usage.model_validate(r.usage)
                except ValidationError as exc:
                    raise StoreError(f"transcript entry {r.seq} of run {run_id} does not parse: {_fields(exc)}") from exc
                out.append(TranscriptRecord(seq=r.seq, role=r.role, message=message, token_estimate=r.token_estimate,
                                            usage=usage, turn=r.turn, created_at=r.created_at,
                                            prev_hash=r.prev_hash, hash=r.hash))
            return out

        return self._tx("transcript", tx)

    # ------------------------------------------------------------------ artifacts

    def put_artifact(self, data: bytes, media_type: str = "text/plain") -> str:
        """Store bytes once under their sha256 (a second put of the same bytes is a no-op).

        Returns:
            The sha256 hex digest that names the artifact.
        """
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise InvalidInputError(f"data: expected bytes, got {type(data).__name__} (encode text first)")
        blob = bytes(data)
        if len(blob) > MAX_ARTIFACT_BYTES:
            raise InvalidInputError(f"data: {len(blob):,} bytes is over the artifact limit of {MAX_ARTIFACT_BYTES:,}")
        _check_text("media_type", media_type, 200, nonempty=True)
        digest = sha256_hex(blob)

        def tx(s: Session) -> None:
            s.execute(
                pg_insert(ArtifactRow)
                .values(sha256=digest, data=blob, media_type=media_type, size=len(blob), created_at=utcnow())
                .on_conflict_do_nothing(index_elements=[ArtifactRow.sha256])
            )

        self._tx("put_artifact", tx)
        return digest

    def get_artifact(self, sha256: str) -> bytes:
        """Raises:
        StoreError: no artifact has this hash."""

        def tx(s: Session) -> bytes:
            data = s.scalar(select(ArtifactRow.data).where(ArtifactRow.sha256 == sha256))
            if data is None:
                raise StoreError(f"no artifact with sha256 {sha256}: it was never stored (check the reference)")
            return bytes(data)

        return self._tx("get_artifact", tx)

    def has_artifact(self, sha256: str) -> bool:
        return self._tx(
            "has_artifact",
            lambda s: s.scalar(select(func.count()).select_from(ArtifactRow).where(ArtifactRow.sha256 == sha256)) == 1,
        )

    def resolve_artifact_prefix(self, prefix: str) -> str:
        """The full sha256 of the one artifact whose hash starts with `prefix` (12 to 64 lowercase
        hex digits), for `read_artifact` references abbreviated by a model or an index.

        Raises:
            InvalidInputError: a malformed prefix, or no artifact or more than one matches it."""
        if not isinstance(prefix, str) or not 12 <= len(prefix) <= 64 or prefix.strip("0123456789abcdef"):
            raise InvalidInputError(f"sha256 prefix: expected 12 to 64 lowercase hex digits, got {prefix!r}")

        def tx(s: Session) -> list[str]:
            # a range on the primary key (index-friendly in any collation) plus the exact LIKE
            query = (select(ArtifactRow.sha256)
                     .where(ArtifactRow.sha256 >= prefix, ArtifactRow.sha256 < prefix + "g",
                            ArtifactRow.sha256.like(prefix + "%"))
                     .limit(2))
            return list(s.scalars(query))

        found = self._tx("resolve_artifact_prefix", tx)
        if not found:
            raise InvalidInputError(f"no artifact's sha256 starts with {prefix}")
        if len(found) > 1:
            raise InvalidInputError(f"more than one artifact's sha256 starts with {prefix}; give more digits or the full hash")
        return found[0]

    # ------------------------------------------------------------------ projections

    def save_projection(self, run_id: str, projection: Projection, *, expected_state_version: int) -> int:
        """Store a compaction's projection, unless it is stale.

        Stale means: the head state moved past `expected_state_version` while the compaction ran,
        or a projection with the same or a newer version is already stored. Either way the
        projection is discarded, never written over newer data.

        Returns:
            The projection's version.

        Raises:
            StaleStateError: the head is not `expected_state_version`.
            StaleProjectionError: (a StaleStateError) a newer or equal projection version exists.
        """
        proj: Projection = _validate(Projection, projection, "projection")
        _check_int("expected_state_version", expected_state_version, minimum=1)
        content = {"summary": self.redactor.redact(proj.summary) if proj.summary else proj.summary,
                   "messages": [self._redact_message(m.model_dump(mode="json")) for m in proj.messages]}
        _check_size("projection", content, MAX_MESSAGE_BYTES * 4, "the projection should be smaller than the window")
        report = proj.report.model_dump(mode="json")

        def tx(s: Session) -> int:
            head = s.scalar(
                select(TaskStateRow.state_version).where(TaskStateRow.run_id == run_id).with_for_update()
            )
            if head is None:
                raise RunNotFoundError(run_id)
            if head != expected_state_version:
                raise StaleStateError(run_id, expected_state_version, head)
            newest = s.scalar(select(func.max(ProjectionRow.version)).where(ProjectionRow.run_id == run_id))
            if newest is not None and newest >= proj.version:
                raise StaleProjectionError(run_id, proj.version, newest)
            s.add(ProjectionRow(run_id=run_id, version=proj.version, base_state_version=proj.base_state_version,
                                covers_through_seq=proj.covers_through_seq, content=content, report=report,
                                created_at=utcnow()))
            s.flush()
            return proj.version

        return self._tx("save_projection", tx)

    @staticmethod
    def _projection(run_id: str, row: ProjectionRow) -> Projection:
        try:
            return Projection(
                version=row.version, base_state_version=row.base_state_version,
                covers_through_seq=row.covers_through_seq, summary=row.content.get("summary"),
                messages=[Message.model_validate(m) for m in row.content.get("messages", [])],
                report=CompactionReport.model_validate(row.report),
            )
        except ValidationError as exc:
            raise StoreError(f"projection {row.version} of run {run_id} does not parse: {_fields(exc)}") from exc

    def latest_projection(self, run_id: str) -> Projection | None:
        """The newest projection of the run, or None before the first compaction."""

        def tx(s: Session) -> Projection | None:
            self._require_run(s, run_id)
            row = s.scalars(
                select(ProjectionRow).where(ProjectionRow.run_id == run_id)
                .order_by(ProjectionRow.version.desc()).limit(1)
            ).one_or_none()
            return None if row is None else self._projection(run_id, row)

        return self._tx("latest_projection", tx)

    def projections(self, run_id: str) -> list[Projection]:
        """Every projection of the run, oldest first."""

        def tx(s: Session) -> list[Projection]:
            self._require_run(s, run_id)
            rows = s.scalars(
                select(ProjectionRow).where(ProjectionRow.run_id == run_id).order_by(ProjectionRow.version)
            )
            return [self._projection(run_id, r) for r in rows]

        return self._tx("projections", tx)

    # ------------------------------------------------------------------ audit

    def append_audit(self, run_id: str, event: AuditEvent, *, actor: str = "system") -> int:
        """Append an audit event (hash-chained).

        Returns:
            The event's sequence number (1, 2, ... per run).
        """
        _check_text("actor", actor, ACTOR_MAX, nonempty=True)
        try:
            raw = event.model_dump(mode="json") if isinstance(event, BaseModel) else event
            parsed = audit_event_adapter.validate_python(self.redactor.redact_json(raw))
        except ValidationError as exc:
            raise InvalidInputError(f"invalid audit event: {_fields(exc)}") from exc

        def tx(s: Session) -> int:
            run = self._lock_run(s, run_id)
            return self._append_audit(s, run, parsed, actor, utcnow())

        return self._tx("append_audit", tx)

    @staticmethod
    def _append_audit(s: Session, run: Any, event: Any, actor: str, now: datetime) -> int:
        data = event.model_dump(mode="json")
        _check_size("event", data, MAX_EVENT_BYTES, "audit events carry references, not content")
        seq = run.audit_count + 1
        prev = run.audit_head
        digest = chain_hash(prev, audit_payload(run.run_id, seq, event.kind, data, actor, now))
        s.execute(insert(AuditEventRow.__table__).values(
            run_id=run.run_id, seq=seq, kind=event.kind, event=data, actor=actor, created_at=now,
            prev_hash=prev, hash=digest))
        Store._move_head(s, run.run_id, "audit", digest, seq)
        return seq

    def audit(self, run_id: str) -> list[AuditRecord]:
        """The run's audit events, oldest first."""

        def tx(s: Session) -> list[AuditRecord]:
            self._require_run(s, run_id)
            out = []
            for r in s.scalars(select(AuditEventRow).where(AuditEventRow.run_id == run_id).order_by(AuditEventRow.seq)):
                try:
                    event = audit_event_adapter.validate_python(r.event)
                except ValidationError as exc:
                    raise StoreError(f"audit event {r.seq} of run {run_id} does not parse: {_fields(exc)}") from exc
                out.append(AuditRecord(seq=r.seq, kind=r.kind, event=event, actor=r.actor, created_at=r.created_at,
                                       prev_hash=r.prev_hash, hash=r.hash))
            return out

        return self._tx("audit", tx)

    # ------------------------------------------------------------------ verification

    def verify_chain(self, run_id: str) -> ChainVerdict:
        """Check the run's three hash chains against their rows and the heads stored on `runs`.

        Reads everything in one REPEATABLE READ snapshot so concurrent appends cannot produce a
        false alarm.

        Returns:
            `ChainVerdict(ok=True, ...)`, or the first bad row: table, row number and why.

        Raises:
            RunNotFoundError: no run has this id.
        """

        def tx(s: Session) -> ChainVerdict:
            s.connection(execution_options={"isolation_level": "REPEATABLE READ"})
            run = s.get(RunRow, run_id)
            if run is None:
                raise RunNotFoundError(run_id)

            def verdict(table: str, row: int, reason: str) -> ChainVerdict:
                return ChainVerdict(ok=False, table=table, row=row, reason=reason, run_id=run_id)

            versions = list(s.scalars(select(TaskStateVersionRow).where(TaskStateVersionRow.run_id == run_id)
                                      .order_by(TaskStateVersionRow.version)))
            problem = check_chain(
                (ChainRow(r.version, state_version_payload(run_id, r.version, r.state, r.actor, r.reason,
                                                           r.created_at), r.prev_hash, r.hash) for r in versions),
                run.state_head, run.state_count,
            )
            if problem:
                return verdict("task_state_versions", problem.row, problem.reason)

            entries = s.scalars(select(TranscriptEntryRow).where(TranscriptEntryRow.run_id == run_id)
                                .order_by(TranscriptEntryRow.seq))
            problem = check_chain(
                (ChainRow(r.seq, transcript_payload(run_id, r.seq, r.role, r.content, r.token_estimate, r.usage,
                                                    r.turn, r.created_at), r.prev_hash, r.hash) for r in entries),
                run.transcript_head, run.transcript_count,
            )
            if problem:
                return verdict("transcript_entries", problem.row, problem.reason)

            events = s.scalars(select(AuditEventRow).where(AuditEventRow.run_id == run_id)
                               .order_by(AuditEventRow.seq))
            problem = check_chain(
                (ChainRow(r.seq, audit_payload(run_id, r.seq, r.kind, r.event, r.actor, r.created_at),
                          r.prev_hash, r.hash) for r in events),
                run.audit_head, run.audit_count,
            )
            if problem:
                return verdict("audit_events", problem.row, problem.reason)

            head = s.get(TaskStateRow, run_id)
            last = versions[-1] if versions else None
            if head is None or last is None or head.state_version != last.version \
                    or canonical_json(head.state) != canonical_json(last.state):
                return verdict(
                    "task_states", head.state_version if head else 0,
                    "the head state does not equal the last recorded state version: it was changed outside "
                    "compare-and-set",
                )
            return ChainVerdict(
                ok=True, table=None, row=None, run_id=run_id,
                reason=f"{run.state_count} state versions, {run.transcript_count} transcript entries, "
                f"{run.audit_count} audit events",
            )

        return self._tx("verify_chain", tx)
