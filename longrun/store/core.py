"""The base every part of `Store` builds on: the engine and its sessions, the transaction runners,
the chain-head caches, input checks and the translation of database errors.

Rules that hold for every store method:

- each public method is its own transaction. The calls of an agent's turn are one statement on a
  pooled psycopg connection in autocommit (`_autocommit`): one round trip, no BEGIN/COMMIT. That
  is the reads `load_state`, `load_turn_head`, `load_call_head`, `head_version`,
  `get_run`/`load_spec`, `get_calibration`, `credential`, `transcript`, `last_transcript_entry`,
  `audit`, `latest_projection`, `get_artifact` and `has_artifact` (an unknown run is told by the
  same statement), the writes `compare_and_set`,
  `set_run_status`, `set_calibration` and `put_artifact`, and `append_transcript`,
  `append_audit`, `append_audits` and `end_run` (a run's final status with its `run_finished`)
  when the cached chain head is right (one read of the head
  more when it is not). The rest run in a session transaction (`_tx`): work whose statements must
  commit together (`create_run`, `save_projection`, `queue_instruction`), `verify_chain`'s
  REPEATABLE READ snapshot, and reads off the hot path (`state_history`, `projections`,
  `list_runs`, `get_instruction`, `resolve_artifact_prefix`);
- SQLSTATE 40001 (serialization failure) and 40P01 (deadlock) are retried a few times with
  jittered backoff, anything else is translated into the `longrun.errors` hierarchy at this
  boundary (`translate_db_error`);
- input is validated before anything is written; a bad value raises `InvalidInputError` naming
  the field, and nothing is written.

The chain-head caches: per chain (state, transcript, audit) a `Store` remembers, for up to
`MAX_CACHED_HEADS` runs each, the (count, hash) head it last wrote or read. An append hashes its
row on that guess and writes in one statement whose WHERE clause checks the guess against the
head stored on `runs`; a wrong guess (another process appended, the run is unknown, the entry was
evicted) writes nothing and costs a read of the head. So the caches are only ever hints: they
save a round trip when right and cannot chain a row wrongly when wrong.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Self, TypeVar, cast

import psycopg
from psycopg.rows import namedtuple_row
from pydantic import BaseModel, ValidationError
from sqlalchemy import Engine, select
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from longrun.errors import (
    AppendOnlyViolation,
    RunNotFoundError,
    StackNotRunning,
    StaleStateError,
    StoreError,
    StoreUnavailable,
)
from longrun.models import RunStatus, canonical_json
from longrun.redact import Redactor, default_redactor
from longrun.store.engine import make_engine
from longrun.store.tables import APPEND_ONLY_SQLSTATE, RUN_ID_MAX, RunRow

T = TypeVar("T")

RETRYABLE_SQLSTATES = frozenset({"40001", "40P01"})
MAX_ATTEMPTS = 5

MAX_CACHED_HEADS = 10_000
"""Runs whose head (count, hash) a `Store` remembers per chain between writes (the least recently
written is forgotten first)."""

CHAINS = ("state", "transcript", "audit")
"""The hash chains of a run, named as the `<chain>_head` / `<chain>_count` columns of `runs`."""

MAX_STATE_BYTES = 4_000_000
"""Largest serialized task state accepted: state is a record, big content belongs in artifacts."""
MAX_MESSAGE_BYTES = 8_000_000
"""Largest serialized transcript message (tool output beyond this belongs in an artifact)."""
MAX_EVENT_BYTES = 1_000_000
MAX_ARTIFACT_BYTES = 256 * 1024 * 1024
MAX_CALIBRATION_BYTES = 100_000
MAX_INSTRUCTION_CHARS = 20_000
"""Longest instruction a human may queue with `say` (the limit the workflow's `say` input has)."""


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


# ---------------------------------------------------------------------- input checks


def fields(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:6]:
        loc = ".".join(str(p) for p in err.get("loc", ())) or "(value)"
        parts.append(f"{loc}: {err.get('msg', 'invalid')}")
    more = exc.error_count() - len(parts)
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


def validate(model: type[BaseModel], value: Any, what: str) -> Any:
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
        raise InvalidInputError(f"invalid {what}: {fields(exc)}") from exc


def check_int(name: str, value: Any, *, minimum: int, optional: bool = False) -> None:
    if value is None and optional:
        return
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidInputError(f"{name}: expected an integer, got {type(value).__name__} {value!r:.60}")
    if value < minimum:
        raise InvalidInputError(f"{name}: must be >= {minimum}, got {value}")


def check_status(status: Any) -> RunStatus:
    """`status` as a `RunStatus`, or an `InvalidInputError` that names the allowed ones."""
    try:
        return RunStatus(status)
    except ValueError:
        raise InvalidInputError(f"status: {status!r} is not one of {', '.join(s.value for s in RunStatus)}") from None


def check_text(name: str, value: Any, limit: int, *, nonempty: bool = False) -> None:
    if not isinstance(value, str):
        raise InvalidInputError(f"{name}: expected a string, got {type(value).__name__}")
    if nonempty and not value.strip():
        raise InvalidInputError(f"{name}: must not be empty")
    if len(value) > limit:
        raise InvalidInputError(f"{name}: {len(value)} characters is over the limit of {limit}")


def check_run_id(name: str, value: Any) -> None:
    check_text(name, value, RUN_ID_MAX, nonempty=True)


def check_size(name: str, payload: Any, limit: int, hint: str) -> None:
    check_text_size(name, canonical_json(payload), limit, hint)


def check_text_size(name: str, serialized: str, limit: int, hint: str) -> None:
    size = len(serialized.encode("utf-8"))
    if size > limit:
        raise InvalidInputError(f"{name}: {size:,} bytes serialized is over the limit of {limit:,} bytes; {hint}")


# ---------------------------------------------------------------------- database errors


def sqlstate_of(exc: DBAPIError) -> str | None:
    return getattr(exc.orig, "sqlstate", None)


def _db_message(exc: DBAPIError) -> str:
    diag = getattr(exc.orig, "diag", None)
    primary = getattr(diag, "message_primary", None) or str(exc.orig).splitlines()[0]
    hint = getattr(diag, "message_hint", None)
    return f"{primary} ({hint})" if hint else primary


TRANSIENT_SQLSTATE_CLASSES = frozenset({"08", "40", "53", "57", "58"})
"""SQLSTATE classes that say "not now" rather than "never": connection exceptions, transaction
rollback (serialization failure, deadlock), insufficient resources (too many connections, disk
full), operator intervention (the server shutting down or restarting) and system errors."""


def translate_db_error(exc: DBAPIError, what: str) -> Exception:
    """Map a database error to the longrun hierarchy (the store's boundary)."""
    code = sqlstate_of(exc)
    message = _db_message(exc)
    if code == APPEND_ONLY_SQLSTATE:
        return AppendOnlyViolation(f"{what} refused: {message}")
    if isinstance(exc, OperationalError) and (code is None or code.startswith("08")):
        return StackNotRunning(
            f"PostgreSQL does not answer ({message}); start it with `longrun dev up` "
            "or point LONGRUN_DATABASE_URL at a running server"
        )
    if code is not None and code[:2] in TRANSIENT_SQLSTATE_CLASSES:
        return StoreUnavailable(f"{what} failed for now: {message} (SQLSTATE {code}); it is retried")
    if code == "42P01":
        return StoreError(f"{what} failed: {message}; the database is not migrated: run `longrun dev up` or migrate()")
    return StoreError(f"{what} failed: {message} (SQLSTATE {code})")


# ---------------------------------------------------------------------- the base


class StoreCore:
    """What every part of the `Store` shares: one engine, its sessions, the redactor, the
    transaction runners and the cache of state chain heads.

    Thread-safe: share one store per process; each call checks a connection out of the pool.
    """

    def __init__(self, engine: Engine, *, owns_engine: bool = False, redactor: Redactor | None = None) -> None:
        self.engine = engine
        self._owns_engine = owns_engine
        self._sessions = sessionmaker(engine, expire_on_commit=False)
        self.redactor = redactor or default_redactor()
        """Applied to every text the store records for a human or a model (the run's objective and
        constraints, transcript messages, projections, audit events, queued instructions): whatever
        path a secret took to get here, it is stored as `[REDACTED:<kind>]` (see longrun.redact)."""
        self._chain_heads: dict[str, dict[str, tuple[int, str]]] = {chain: {} for chain in CHAINS}
        """chain -> run id -> (count, hash of the chain's last row) as last written or read by this
        store: the `prev_hash` the next write chains on without reading it first. Only a hint: the
        write's statement checks it against `runs.<chain>_head` and writes nothing when it is wrong."""
        self._heads = self._chain_heads["state"]
        """run id -> (state version, its chain hash): the `prev_hash` a compare-and-set chains on."""
        self._heads_lock = threading.Lock()

    def _redact_message(self, content: dict[str, Any]) -> dict[str, Any]:
        """A message's JSON with every string redacted, except thinking blocks, which the provider
        needs back byte for byte (their signature covers them)."""
        blocks = content.get("content")
        if not isinstance(blocks, list):
            redacted: dict[str, Any] = self.redactor.redact_json(content)
            return redacted
        kept = [b if isinstance(b, dict) and b.get("type") in ("thinking", "redacted_thinking")
                else self.redactor.redact_json(b) for b in blocks]
        return {**{k: self.redactor.redact_json(v) for k, v in content.items() if k != "content"}, "content": kept}

    @classmethod
    def from_url(cls, url: str, **engine_kwargs: Any) -> Self:
        """A store on its own engine (closed by `close()`)."""
        return cls(make_engine(url, **engine_kwargs), owns_engine=True)

    def close(self) -> None:
        """Dispose of the engine's connections when this store created the engine."""
        if self._owns_engine:
            self.engine.dispose()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def ping(self) -> None:
        """Raise if the database does not answer (used before telling a user the stack runs)."""
        self._tx("ping", lambda s: s.execute(select(1)).scalar_one())

    # ------------------------------------------------------------------ transactions

    def _tx(self, what: str, fn: Callable[[Session], T]) -> T:
        for attempt in range(1, MAX_ATTEMPTS + 1):
            try:
                with self._sessions() as session, session.begin():
                    return fn(session)
            except DBAPIError as exc:
                if sqlstate_of(exc) in RETRYABLE_SQLSTATES and attempt < MAX_ATTEMPTS:
                    time.sleep(random.uniform(0, 0.02 * 2**attempt))
                    continue
                raise translate_db_error(exc, what) from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def _autocommit(
        self, what: str, fn: Callable[[psycopg.Connection], T], *, run_id: str | None = None, chain: str = "state"
    ) -> T:
        """`fn` on a pooled psycopg connection in autocommit mode: each statement is its own
        transaction and one round trip (no BEGIN/COMMIT, no SQLAlchemy layers: this is the hot path
        of reads, compare-and-set and appends). For work whose statements are each complete on
        their own. Retried like `_tx`; on a database or unexpected error the cached head of
        `chain` for `run_id` is dropped."""
        for attempt in range(1, MAX_ATTEMPTS + 1):
            try:
                return self._on_driver_connection(fn)
            except DBAPIError as exc:
                if run_id is not None:
                    self._forget_head(run_id, chain)
                if sqlstate_of(exc) in RETRYABLE_SQLSTATES and attempt < MAX_ATTEMPTS:
                    time.sleep(random.uniform(0, 0.02 * 2**attempt))
                    continue
                raise translate_db_error(exc, what) from exc
            except StoreError:
                raise  # an answer (stale, not found, refused input), not a doubt about the cached head
            except BaseException:
                if run_id is not None:
                    self._forget_head(run_id, chain)
                raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _on_driver_connection(self, fn: Callable[[psycopg.Connection], T]) -> T:
        """Check a connection out of the engine's pool, run `fn` on its psycopg connection in
        autocommit, and give it back in the pool's default mode.

        The checkout is not pinged (the engine has no pre-ping, see `make_engine`): a pooled
        connection that died with a server restart fails on `fn`'s first statement. psycopg errors
        are wrapped as SQLAlchemy's `DBAPIError` (as the engine would); a connection the dialect
        calls disconnected is invalidated here, so the pool does not hand it out again, and the
        error reaches the caller (`_autocommit` reports it as `StackNotRunning`; the activity is
        retried by Temporal)."""
        try:
            fairy = self.engine.raw_connection()
        except psycopg.Error as exc:  # the pool raises the driver's own error when it cannot connect
            raise DBAPIError.instance(None, None, exc, psycopg.Error, hide_parameters=True,
                                      dialect=self.engine.dialect) from exc
        conn = fairy.driver_connection
        assert isinstance(conn, psycopg.Connection)
        try:
            conn.autocommit = True
            return fn(conn)
        except psycopg.Error as exc:
            # the dialect is typed for DB-API objects in general; psycopg's are those it handles
            disconnected = self.engine.dialect.is_disconnect(cast(Any, exc), cast(Any, conn), None)
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

    @contextmanager
    def transaction(self, what: str = "statement") -> Iterator[Session]:
        """A session in one transaction, with database errors translated (no retry: the body
        cannot be replayed). For maintenance and tests; the repository methods cover the app."""
        try:
            with self._sessions() as session, session.begin():
                yield session
        except DBAPIError as exc:
            raise translate_db_error(exc, what) from exc

    # ------------------------------------------------------------------ the chain-head caches

    def _remember_head(self, run_id: str, count: int, digest: str, chain: str = "state", *,
                       newer_only: bool = False) -> None:
        """Remember (count, digest) as the head of `chain` for the run. With `newer_only`, a head
        this store already knows to be further along is kept (a read or a write that finished
        after a newer one: heads only move forward, so the further one is the likelier guess)."""
        heads = self._chain_heads[chain]
        with self._heads_lock:
            old = heads.pop(run_id, None)
            heads[run_id] = old if newer_only and old is not None and old[0] > count else (count, digest)
            if len(heads) > MAX_CACHED_HEADS:
                del heads[next(iter(heads))]  # the least recently written

    def _forget_head(self, run_id: str, chain: str = "state") -> None:
        with self._heads_lock:
            self._chain_heads[chain].pop(run_id, None)

    def _cached_head(self, run_id: str, version: int) -> str | None:
        """The chain hash of state `version` of the run, if this store remembers it."""
        head = self._heads.get(run_id)
        return head[1] if head is not None and head[0] == version else None

    def _cached_chain_head(self, chain: str, run_id: str) -> tuple[int, str] | None:
        """The (count, hash) this store last saw as the head of the run's `chain`, if any."""
        return self._chain_heads[chain].get(run_id)

    # ------------------------------------------------------------------ the runs row

    @staticmethod
    def _require_run(session: Session, run_id: str) -> None:
        if session.scalar(select(RunRow.run_id).where(RunRow.run_id == run_id)) is None:
            raise RunNotFoundError(run_id)


def calibration_json(data: Any) -> str:
    """The run's calibration data as the JSON text stored on `runs`.

    Raises:
        InvalidInputError: not a JSON object, not serializable, or over `MAX_CALIBRATION_BYTES`."""
    if not isinstance(data, Mapping):
        raise InvalidInputError(f"calibration: expected a JSON object, got {type(data).__name__}")
    try:
        text = json.dumps(data, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"calibration: not JSON-serializable: {exc}") from exc
    if len(text) > MAX_CALIBRATION_BYTES:
        raise InvalidInputError(f"calibration: {len(text):,} bytes is over the limit of {MAX_CALIBRATION_BYTES:,}")
    return text


def fetch(c: psycopg.Connection, sql: str, params: Mapping[str, Any]) -> list[Any]:
    """Every row of one statement, as named tuples (columns by name, as ORM rows have them)."""
    return c.cursor(row_factory=namedtuple_row).execute(sql, params).fetchall()


def fetch_one(c: psycopg.Connection, sql: str, params: Mapping[str, Any]) -> Any | None:
    """The first row of one statement as a named tuple, or None."""
    return c.cursor(row_factory=namedtuple_row).execute(sql, params).fetchone()
