"""A run's audit log: appending events (one, or several consecutively) and reading them back.

Rules:

- an append, of one event or of a batch, is one statement when the store's cached audit head is
  right, and one read of the head more when it is not (see `longrun.store.appends` for why that
  is safe); a batch gets consecutive numbers, all in that one statement, or none of them;
- every event is validated, redacted and size-checked before anything is written, so one bad
  event in a batch writes none of the batch;
- `end_run` sets a run's final status in the statement that appends its `run_finished`: a crash
  can leave neither or both, never a finished run whose end is not audited;
- `audit` is one statement: a `LEFT JOIN` from the `runs` row tells an unknown run from an empty
  log, and returns the chain head, which the store remembers for its next append.

The payload each row's hash covers is defined in `longrun.store.chain`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import psycopg
from pydantic import BaseModel, ValidationError

from longrun.errors import RunNotFoundError, StoreError
from longrun.models import AuditEvent, RunStatus, audit_event_adapter, canonical_json, chain_hash, sha256_hex
from longrun.models.state import MAX_TEXT
from longrun.store.appends import ChainAppendMixin
from longrun.store.artifacts import RESTORE_SQL, RESULTS_CTES, RESULTS_PRUNED
from longrun.store.chain import audit_payload
from longrun.store.core import (
    MAX_ARTIFACT_BYTES,
    MAX_EVENT_BYTES,
    InvalidInputError,
    check_status,
    check_text,
    check_text_size,
    fetch,
    fields,
)
from longrun.store.records import AuditRecord
from longrun.store.tables import ACTOR_MAX

_ROWS = """INSERT INTO audit_events (run_id, seq, kind, event, actor, created_at, prev_hash, hash)
SELECT upd.run_id, e.seq, e.kind, e.event::json, e.actor, %({p}now)s::timestamptz, e.prev_hash, e.hash
FROM upd, unnest(%({p}seqs)s::integer[], %({p}kinds)s::text[], %({p}events)s::text[], %({p}actors)s::text[],
                 %({p}prevs)s::text[], %({p}hashes)s::text[]) AS e(seq, kind, event, actor, prev_hash, hash)
RETURNING seq"""

_APPEND_SQL = """
WITH upd AS (
    UPDATE runs SET audit_head = %(hash)s, audit_count = %(count)s
    WHERE run_id = %(run_id)s AND audit_head = %(prev)s AND audit_count = %(base)s
    RETURNING run_id
)
""" + _ROWS.format(p="")
"""One append of one or more events, one round trip: events `base + 1 ... count`, the first
chained on `prev`, written only if `prev` and `base` are the audit head on `runs` (which the same
statement moves to the last event's hash)."""

_APPEND_WITH_RESULTS_SQL = """
WITH upd AS (
    UPDATE runs SET audit_head = %(hash)s, audit_count = %(count)s
    WHERE run_id = %(run_id)s AND audit_head = %(prev)s AND audit_count = %(base)s
    RETURNING run_id
), """ + RESULTS_CTES + ", aud AS (\n" + _ROWS.format(p="") + "\n)\nSELECT aud.seq, " + RESULTS_PRUNED + " FROM aud"
"""`_APPEND_SQL` with tool results stored and linked to the run (`RESULTS_CTES`): a tool call's
audit events and its output, one round trip."""

_END_RUN_SQL = """
WITH upd AS (
    UPDATE runs SET audit_head = %(hash)s, audit_count = %(count)s, status = %(status)s, reason = %(reason)s,
                    updated_at = %(now)s
    WHERE run_id = %(run_id)s AND audit_head = %(prev)s AND audit_count = %(base)s
    RETURNING run_id
)
""" + _ROWS.format(p="")
"""`_APPEND_SQL` that also sets the run's status and reason: a run's end and the audit events that
record it land together or not at all."""

AUDIT_RIDER_PREFIX = "a_"
AUDIT_HEAD_SET = "audit_head = %(a_hash)s, audit_count = %(a_count)s"
AUDIT_HEAD_CHECK = "audit_head = %(a_prev)s AND audit_count = %(a_base)s"
AUDIT_ROWS_CTE = "aud AS (\n" + _ROWS.format(p=AUDIT_RIDER_PREFIX) + "\n)"
"""For another chain's append statement that carries audit events (`_audit_rows` with the
prefix `a_` makes their parameters): what its UPDATE of the `runs` row also sets and checks, and
the CTE that inserts the events from that UPDATE's row (so they land exactly when it does)."""


_READ_SQL = """
SELECT r.audit_count AS head_count, r.audit_head AS head_hash,
       e.seq, e.kind, e.event, e.actor, e.created_at, e.prev_hash, e.hash
FROM runs r LEFT JOIN audit_events e ON e.run_id = r.run_id
WHERE r.run_id = %(run_id)s
ORDER BY e.seq
"""

_PAGE_SQL = """
SELECT e.seq, e.kind, e.event, e.actor, e.created_at, e.prev_hash, e.hash
FROM runs r LEFT JOIN LATERAL (
    SELECT * FROM audit_events a WHERE a.run_id = r.run_id AND a.seq > %(after)s ORDER BY a.seq LIMIT %(limit)s
) e ON true
WHERE r.run_id = %(run_id)s
ORDER BY e.seq
"""


class AuditMixin(ChainAppendMixin):
    """The audit log: append-only, hash-chained, numbered 1, 2, ... per run."""

    def _audit_entry(self, event: Any, actor: Any, where: str = "") -> tuple[Any, dict[str, Any], str]:
        """Check and redact one event before anything is written: the parsed event, its JSON (what
        is hashed) and that JSON as canonical text (what is stored). `where` names it in a batch.

        Raises:
            InvalidInputError: a bad actor or event, or an event over `MAX_EVENT_BYTES`.
        """
        check_text(f"{where}actor", actor, ACTOR_MAX, nonempty=True)
        try:
            raw = event.model_dump(mode="json") if isinstance(event, BaseModel) else event
            parsed = audit_event_adapter.validate_python(self.redactor.redact_json(raw))
        except ValidationError as exc:
            raise InvalidInputError(f"{where}invalid audit event: {fields(exc)}") from exc
        data = parsed.model_dump(mode="json")
        text = canonical_json(data)
        check_text_size(f"{where}event", text, MAX_EVENT_BYTES, "audit events carry references, not content")
        return parsed, data, text

    @staticmethod
    def _audit_hash(run_id: str, seq: int, prev: str, kind: str, data: dict[str, Any], actor: str,
                    now: datetime) -> str:
        """The chain hash of audit event `seq` chained on `prev`."""
        return chain_hash(prev, audit_payload(run_id, seq, kind, data, actor, now))

    def append_audit(self, run_id: str, event: AuditEvent, *, actor: str = "system") -> int:
        """Append an audit event (hash-chained).

        Returns:
            The event's sequence number (1, 2, ... per run).
        """
        return self._append_audits("append_audit", run_id, [(*self._audit_entry(event, actor), actor)])[0]

    def append_audits(self, run_id: str, events: Sequence[tuple[AuditEvent, str]], *,
                      artifacts: Sequence[bytes] = ()) -> list[int]:
        """Append `(event, actor)` pairs as consecutive audit events, in one statement: all of them
        or, when one is refused, none (e.g. a gate verdict together with the tool's result). With
        `artifacts`, those bytes are stored as text artifacts linked to the run (as `put_artifact`
        would) in that statement too: a tool's output lands with the `tool_ran` event naming it.

        Returns:
            The events' sequence numbers, in order (an empty batch writes nothing and returns []).

        Raises:
            InvalidInputError: a pair, event or actor is bad (the message names its index;
                nothing written).
            RunNotFoundError: no run has this id.
        """
        given: Any = events  # checked as it came, whatever the annotation says
        if isinstance(given, (str, bytes)) or not isinstance(given, Sequence):
            raise InvalidInputError(f"events: expected a sequence of (event, actor) pairs, got {type(given).__name__}")
        checked = []
        for i, pair in enumerate(given):
            if not isinstance(pair, tuple) or len(pair) != 2:
                raise InvalidInputError(f"events[{i}]: expected an (event, actor) pair, got {type(pair).__name__}")
            event, actor = pair
            checked.append((*self._audit_entry(event, actor, f"events[{i}]: "), actor))
        blobs = {sha256_hex(bytes(b)): bytes(b) for b in artifacts}
        for digest, blob in blobs.items():
            if len(blob) > MAX_ARTIFACT_BYTES:
                raise InvalidInputError(f"artifact {digest}: {len(blob):,} bytes is over the limit of {MAX_ARTIFACT_BYTES:,}")
        if not checked and blobs:
            raise InvalidInputError("artifacts: stored with the audit events that name them, and there are none")
        if not checked:
            return []
        if not blobs:
            return self._append_audits("append_audits", run_id, checked)

        def build(heads: tuple[tuple[int, str], ...], now: datetime) -> tuple[dict[str, Any], tuple[tuple[int, str], ...]]:
            params, count, digest = self._audit_rows(run_id, checked, *heads[0], now)
            return {**params, "r_shas": list(blobs), "r_datas": list(blobs.values())}, ((count, digest),)

        rows: list[Any] = []
        base = self._append_joint("append_audits", ("audit",), run_id, _APPEND_WITH_RESULTS_SQL, build, landed=rows)[0]
        for digest in rows[0][1] or ():  # bytes `longrun prune` emptied: put back, as `put_artifact` does
            params = {"sha256": digest, "data": blobs[digest]}

            def restore(c: psycopg.Connection, params: dict[str, Any] = params) -> None:
                c.execute(RESTORE_SQL, params)

            self._autocommit("restore_artifact", restore)
        return list(range(base + 1, base + 1 + len(checked)))

    def end_run(self, run_id: str, status: str | RunStatus, reason: str, events: Sequence[AuditEvent]) -> list[int]:
        """Set the run's final `status` and `reason` and append `events` (actor `system`; the
        last is its `run_finished`), in one statement. Before, the status was set first and the
        events appended after: a crash between the two left a finished run with no `run_finished`,
        and a retry, seeing the status already final, never wrote it.

        Returns:
            The events' sequence numbers, in order.

        Raises:
            InvalidInputError: `status` is not final, `reason` is oversized, an event is bad, or
                there are no events (nothing written).
            RunNotFoundError: no run has this id.
        """
        final = check_status(status)
        if not final.finished:
            raise InvalidInputError(f"status: {status!r} does not end a run")
        check_text("reason", reason, MAX_TEXT)
        if not events:
            raise InvalidInputError("events: a run's end is recorded by at least its run_finished event")
        checked = [(*self._audit_entry(e, "system", f"events[{i}]: "), "system") for i, e in enumerate(events)]
        extra = {"status": final.value, "reason": reason}
        return self._append_audits("end_run", run_id, checked, sql=_END_RUN_SQL, extra=extra)

    def _append_audits(self, what: str, run_id: str, checked: list[tuple[Any, dict[str, Any], str, str]], *,
                       sql: str = _APPEND_SQL, extra: dict[str, Any] | None = None) -> list[int]:
        """Append checked events (from `_audit_entry`, each with its actor) consecutively, with
        `sql` (`_APPEND_SQL`, or a variant whose UPDATE of `runs` also sets `extra`)."""

        def build(count: int, prev: str, now: datetime) -> tuple[dict[str, Any], int, str]:
            params, last, digest = self._audit_rows(run_id, checked, count, prev, now)
            return {**params, **(extra or {})}, last, digest

        base = self._append_chained(what, "audit", run_id, sql, build)
        return list(range(base + 1, base + 1 + len(checked)))

    def _audit_rows(self, run_id: str, checked: list[tuple[Any, dict[str, Any], str, str]], count: int, prev: str,
                    now: datetime, prefix: str = "") -> tuple[dict[str, Any], int, str]:
        """The parameters that append `checked` on the audit head (count, prev), each name after
        `prefix` (`AUDIT_RIDER_PREFIX` in another chain's statement), the new count and head hash."""
        seqs, prevs, hashes = [], [], []
        digest = prev
        for offset, (parsed, data, _text, actor) in enumerate(checked, start=1):
            prevs.append(digest)
            digest = self._audit_hash(run_id, count + offset, digest, parsed.kind, data, actor, now)
            seqs.append(count + offset)
            hashes.append(digest)
        last = seqs[-1] if seqs else count
        params = {"run_id": run_id, "base": count, "count": last, "prev": prev, "hash": digest, "now": now,
                  "seqs": seqs, "kinds": [p.kind for p, _d, _t, _a in checked],
                  "events": [t for _p, _d, t, _a in checked], "actors": [a for _p, _d, _t, a in checked],
                  "prevs": prevs, "hashes": hashes}
        return {prefix + k: v for k, v in params.items()}, last, digest

    def audit(self, run_id: str) -> list[AuditRecord]:
        """The run's audit events, oldest first."""

        def read(c: psycopg.Connection) -> list[AuditRecord]:
            rows = fetch(c, _READ_SQL, {"run_id": run_id})
            if not rows:
                raise RunNotFoundError(run_id)
            self._remember_head(run_id, rows[0].head_count, rows[0].head_hash, "audit", newer_only=True)
            return [_record(run_id, r) for r in rows if r.seq is not None]

        return self._autocommit("audit", read)

    def audit_page(self, run_id: str, *, after_seq: int = 0, limit: int = 200) -> list[AuditRecord]:
        """At most `limit` audit events numbered after `after_seq`, oldest first: the console's
        paged timeline and its live feed read the log this way, not whole.

        Raises:
            RunNotFoundError: no such run.
        """

        def read(c: psycopg.Connection) -> list[AuditRecord]:
            rows = fetch(c, _PAGE_SQL, {"run_id": run_id, "after": after_seq, "limit": limit})
            if not rows:
                raise RunNotFoundError(run_id)
            return [_record(run_id, r) for r in rows if r.seq is not None]

        return self._autocommit("audit_page", read)


def _record(run_id: str, r: Any) -> AuditRecord:
    try:
        event = audit_event_adapter.validate_python(r.event)
    except ValidationError as exc:
        raise StoreError(f"audit event {r.seq} of run {run_id} does not parse: {fields(exc)}") from exc
    return AuditRecord(seq=r.seq, kind=r.kind, event=event, actor=r.actor, created_at=r.created_at,
                       prev_hash=r.prev_hash, hash=r.hash)
