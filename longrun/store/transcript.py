"""A run's transcript: appending a message and reading entries back.

Rules:

- an append is one statement when the store's cached transcript head is right, and one read of
  the head more when it is not (see `longrun.store.appends` for why that is safe);
- what is appended is redacted first (thinking blocks excepted, see `_redact_message`), and its
  size is checked before anything is written;
- every read is one statement: a `LEFT JOIN` from the `runs` row tells an unknown run (no row)
  from an empty range (one row of NULLs), and returns the chain head too, which the store
  remembers for its next append.

The payload each row's hash covers is defined in `longrun.store.chain`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import psycopg
from pydantic import ValidationError

from longrun.errors import RunNotFoundError, StoreError
from longrun.models import AuditEvent, Message, Usage, canonical_json, chain_hash
from longrun.store.appends import Head
from longrun.store.audit import AUDIT_HEAD_CHECK, AUDIT_HEAD_SET, AUDIT_RIDER_PREFIX, AUDIT_ROWS_CTE, AuditMixin
from longrun.store.chain import transcript_payload
from longrun.store.core import (
    MAX_MESSAGE_BYTES,
    InvalidInputError,
    calibration_json,
    check_int,
    check_text_size,
    fetch,
    fields,
    validate,
)
from longrun.store.records import TranscriptRecord
from longrun.store.spend import SETTLE_AFTER_APPEND, Settle
from longrun.store.tombstone import tombstone_of

_UPDATE_HEAD = """upd AS (
    UPDATE runs SET transcript_head = %(hash)s, transcript_count = %(seq)s,
        calibration = coalesce(%(calibration)s::jsonb, calibration){audit_set}
    WHERE run_id = %(run_id)s AND transcript_head = %(prev)s AND transcript_count = %(seq)s - 1{audit_check}
    RETURNING run_id
)"""

_INSERT = """INSERT INTO transcript_entries
    (run_id, seq, role, content, token_estimate, usage, turn, created_at, prev_hash, hash)
SELECT run_id, %(seq)s::integer, %(role)s::text, %(content)s::json, %(token_estimate)s::integer,
       %(usage)s::json, %(turn)s::integer, %(now)s::timestamptz, %(prev)s::text, %(hash)s::text
FROM upd
RETURNING seq"""


def _append_sql(*, settle: bool, audited: bool) -> str:
    """The append statement: one entry chained on the transcript head, written only if `prev` and
    `seq - 1` are the head on `runs` (which the same statement moves); a model call's answer
    brings the calibration it updated (`calibration`, else NULL: kept). With `settle`, the settle
    of its request in the spend ledger (`longrun.store.spend`), so the ledger row is answered
    exactly when the entry lands; with `audited`, audit events whose head the same UPDATE checks
    and moves (`longrun.store.audit`), so the answer and its audit land together or not at all."""
    head = _UPDATE_HEAD.format(audit_set=f", {AUDIT_HEAD_SET}" if audited else "",
                               audit_check=f" AND {AUDIT_HEAD_CHECK}" if audited else "")
    ctes = [head, *([AUDIT_ROWS_CTE] if audited else [])]
    if not settle and not audited:
        return f"WITH {head}\n{_INSERT}"
    ctes.append(f"ins AS (\n{_INSERT}\n)")
    if settle:
        ctes.append(SETTLE_AFTER_APPEND)
    return "WITH " + ", ".join(ctes) + "\nSELECT seq FROM ins"


_APPEND_SQLS = {(settle, audited): _append_sql(settle=settle, audited=audited)
                for settle in (False, True) for audited in (False, True)}

_COLUMNS = "t.seq, t.role, t.content, t.token_estimate, t.usage, t.turn, t.created_at, t.prev_hash, t.hash"

LINEAGE_SEGMENTS = """
seg(run_id, lo, hi) AS (
    SELECT %(run_id)s::varchar,
           coalesce((SELECT l.parent_through_seq FROM run_lineage l WHERE l.run_id = %(run_id)s), 0),
           2147483647
    UNION ALL
    SELECT l.parent_run_id,
           coalesce((SELECT p.parent_through_seq FROM run_lineage p WHERE p.run_id = l.parent_run_id), 0),
           least(seg.hi, l.parent_through_seq)
    FROM seg JOIN run_lineage l ON l.run_id = seg.run_id
)"""
"""Whose entries a run's transcript is made of, as (run, after seq, through seq) segments: its own
entries, and for a fork (`run_lineage`, migration 0013) its parent's through the fork point, that
parent's parent's through its own fork point, and so on. A fork's own entries are numbered after
its fork point, so the segments never overlap and `seq` stays dense along the lineage. A run that
is no fork has one segment: its own entries."""

VISIBLE_ENTRIES = ("WITH RECURSIVE " + LINEAGE_SEGMENTS + """, te AS (
    SELECT e.* FROM seg JOIN transcript_entries e ON e.run_id = seg.run_id AND e.seq > seg.lo AND e.seq <= seg.hi
)
""")
"""`te`: the entries a run's transcript holds, by reference along its lineage (never copied)."""

_RANGE_SQL = VISIBLE_ENTRIES + f"""
SELECT r.transcript_count AS head_count, r.transcript_head AS head_hash, {_COLUMNS}
FROM runs r LEFT JOIN te t
  ON t.seq > %(after)s::bigint AND t.seq <= coalesce(%(through)s::bigint, 2147483647)
WHERE r.run_id = %(run_id)s
ORDER BY t.seq
"""

_TAIL_SQL = "WITH RECURSIVE " + LINEAGE_SEGMENTS + """, tw AS (
    SELECT e.seq, e.token_estimate FROM seg JOIN transcript_entries e
      ON e.run_id = seg.run_id AND e.seq > seg.lo AND e.seq <= seg.hi
), te AS (
    SELECT e.* FROM seg JOIN transcript_entries e ON e.run_id = seg.run_id AND e.seq > seg.lo AND e.seq <= seg.hi
)""" + f"""
SELECT r.transcript_count AS head_count, r.transcript_head AS head_hash, {_COLUMNS}
FROM runs r LEFT JOIN te t
  ON t.seq > greatest(%(after)s::bigint, coalesce((
      SELECT max(w.seq) - 1 FROM (
        SELECT e.seq, sum(e.token_estimate) OVER (ORDER BY e.seq DESC) - e.token_estimate AS newer
        FROM tw e WHERE e.seq > %(after)s::bigint
      ) w WHERE w.newer >= %(tokens)s::bigint), 0))
WHERE r.run_id = %(run_id)s
ORDER BY t.seq
"""
"""The newest entries after `after` whose token estimates reach `tokens`, and the one before the
oldest of them: the window sums only `seq` and `token_estimate`, so the contents of the older
entries are neither read from TOAST nor sent."""

_LAST_SQL = VISIBLE_ENTRIES + f"""
SELECT r.transcript_count AS head_count, r.transcript_head AS head_hash, {_COLUMNS}
FROM runs r LEFT JOIN LATERAL (
    SELECT * FROM te e ORDER BY e.seq DESC LIMIT 1
) t ON true
WHERE r.run_id = %(run_id)s
"""


class TranscriptMixin(AuditMixin):
    """The transcript: append-only, hash-chained, numbered 1, 2, ... per run."""

    def last_transcript_entry(self, run_id: str) -> TranscriptRecord | None:
        """The newest transcript entry of a run, or None for an empty transcript. Activities use
        it to stay idempotent per turn (a retried model call or commit finds its own entry)."""
        rows = self._autocommit("last_transcript_entry", lambda c: self._read_entries(c, _LAST_SQL, run_id, {}))
        return rows[0] if rows else None

    def append_transcript(
        self,
        run_id: str,
        message: Message,
        *,
        token_estimate: int,
        usage: Usage | None = None,
        turn: int | None = None,
        calibration: dict[str, Any] | None = None,
        settle: Settle | None = None,
        audits: Callable[[int], Sequence[tuple[AuditEvent, str]]] | None = None,
        written: Callable[[TranscriptRecord], None] | None = None,
    ) -> int:
        """Append one message to the run's transcript (kept in full, hash-chained), and with
        `calibration`, replace the run's calibration data in the same statement (as
        `set_calibration` would: a model call's answer and what it taught the estimator); with
        `settle` (a model's answer, `turn` set), settle the turn's request in the spend ledger in
        that statement too (as `settle_turn` would, and only if the entry is written); with
        `audits`, append the `(event, actor)` pairs it returns for the entry's seq to the audit
        in that statement too (as `append_audits` would: all, and only with the entry). With
        `written`, it is called with the entry as stored (redacted), as a read would return it:
        what a turn keeps in its transcript tail instead of reading it back.

        Returns:
            The entry's sequence number (1, 2, ... per run).

        Raises:
            InvalidInputError: bad message, token estimate, usage, turn or audit event (nothing written).
            RunNotFoundError: no run has this id.
        """
        msg, content, content_text, usage_json = self._transcript_entry(message, token_estimate, usage, turn)
        usage_text = None if usage_json is None else canonical_json(usage_json)
        calibration_text = None if calibration is None else calibration_json(calibration)
        if settle is not None and turn is None:
            raise InvalidInputError("turn: a settled answer needs its turn")
        settled = {} if settle is None else settle.params()

        landed: list[tuple[int, str, str, datetime]] = []

        def entry(count: int, prev: str, now: datetime) -> tuple[dict[str, Any], Head]:
            seq = count + 1
            digest = self._transcript_hash(run_id, seq, prev, msg.role, content, token_estimate, usage_json, turn, now)
            landed[:] = [(seq, prev, digest, now)]  # the last one built is the one that landed
            return ({"run_id": run_id, "seq": seq, "role": msg.role, "content": content_text,
                     "token_estimate": token_estimate, "usage": usage_text, "turn": turn, "now": now,
                     "prev": prev, "hash": digest, "calibration": calibration_text, **settled}, (seq, digest))

        def build(heads: tuple[Head, ...], now: datetime) -> tuple[dict[str, Any], tuple[Head, ...]]:
            params, moved = entry(*heads[0], now)
            if audits is None:
                return params, (moved,)
            checked = [(*self._audit_entry(event, actor, f"audits[{i}]: "), actor)
                       for i, (event, actor) in enumerate(audits(moved[0]))]
            rows, count, digest = self._audit_rows(run_id, checked, *heads[1], now, prefix=AUDIT_RIDER_PREFIX)
            return {**params, **rows}, (moved, (count, digest))

        chains = ("transcript", "audit") if audits is not None else ("transcript",)
        sql = _APPEND_SQLS[(settle is not None, audits is not None)]
        seq = self._append_joint("append_transcript", chains, run_id, sql, build)[0] + 1
        if written is not None:
            _seq, prev, digest, now = landed[0]
            written(TranscriptRecord(seq=seq, role=msg.role, message=Message.model_validate(content),
                                     token_estimate=token_estimate, usage=None if usage_json is None else
                                     Usage.model_validate(usage_json), turn=turn, created_at=now, prev_hash=prev,
                                     hash=digest))
        return seq

    def _transcript_entry(
        self, message: Any, token_estimate: Any, usage: Any, turn: Any, *, what: str = "transcript message",
        field: str = "message", estimate_field: str = "token_estimate",
    ) -> tuple[Message, dict[str, Any], str, dict[str, Any] | None]:
        """Check and redact a transcript entry before anything is written: the parsed message,
        its redacted JSON content (what is stored and hashed), that content as canonical JSON
        text (what the append statement sends) and the usage JSON.
        `what`, `field` and `estimate_field` are how an error names the message and the arguments.

        Raises:
            InvalidInputError: bad message, token estimate, usage or turn, or the message is too big.
        """
        msg: Message = validate(Message, message, what)
        check_int(estimate_field, token_estimate, minimum=0)
        check_int("turn", turn, minimum=0, optional=True)
        usage_json = None if usage is None else validate(Usage, usage, "usage").model_dump(mode="json")
        content = self._redact_message(msg.model_dump(mode="json"))
        content_text = canonical_json(content)
        check_text_size(field, content_text, MAX_MESSAGE_BYTES, "store large tool output as an artifact and reference it")
        return msg, content, content_text, usage_json

    @staticmethod
    def _transcript_hash(
        run_id: str, seq: int, prev: str, role: str, content: dict[str, Any], token_estimate: int,
        usage_json: dict[str, Any] | None, turn: int | None, now: datetime,
    ) -> str:
        """The chain hash of transcript entry `seq` chained on `prev`."""
        return chain_hash(prev, transcript_payload(run_id, seq, role, content, token_estimate, usage_json, turn, now))

    def transcript(self, run_id: str, *, after_seq: int = 0, through_seq: int | None = None) -> list[TranscriptRecord]:
        """Transcript entries with `after_seq < seq <= through_seq`, in order."""
        check_int("after_seq", after_seq, minimum=0)
        check_int("through_seq", through_seq, minimum=0, optional=True)
        params = {"after": after_seq, "through": through_seq}
        return self._autocommit("transcript", lambda c: self._read_entries(c, _RANGE_SQL, run_id, params))

    def transcript_tail(self, run_id: str, *, after_seq: int = 0, tokens: int) -> list[TranscriptRecord]:
        """The newest entries with `seq > after_seq`, oldest first, as far back as their token
        estimates reach `tokens`, and one entry more (the tool_use of a first tool result): what
        a request can hold, however long the stretch after `after_seq` is. One statement.

        Raises:
            InvalidInputError: a negative `after_seq` or `tokens`.
            RunNotFoundError: no such run."""
        check_int("after_seq", after_seq, minimum=0)
        check_int("tokens", tokens, minimum=0)
        params = {"after": after_seq, "tokens": tokens}
        return self._autocommit("transcript_tail", lambda c: self._read_entries(c, _TAIL_SQL, run_id, params))

    def _read_entries(self, c: psycopg.Connection, sql: str, run_id: str, params: dict[str, Any]) -> list[TranscriptRecord]:
        """Run a transcript read (one statement joined from the `runs` row), remember the head it
        returned, and parse the entries."""
        rows = fetch(c, sql, {"run_id": run_id, **params})
        if not rows:
            raise RunNotFoundError(run_id)
        self._remember_head(run_id, rows[0].head_count, rows[0].head_hash, "transcript", newer_only=True)
        return [self._transcript_record(run_id, r) for r in rows if r.seq is not None]

    @staticmethod
    def _transcript_record(run_id: str, r: Any) -> TranscriptRecord:
        pruned = tombstone_of(r.content)
        try:
            message = Message.model_validate(r.content if pruned is None else
                                             {"role": r.role, "content": [{"type": "text", "text": pruned.placeholder()}]})
            usage = None if r.usage is None else Usage.model_validate(r.usage)
        except ValidationError as exc:
            raise StoreError(f"transcript entry {r.seq} of run {run_id} does not parse: {fields(exc)}") from exc
        return TranscriptRecord(seq=r.seq, role=r.role, message=message, token_estimate=r.token_estimate,
                                usage=usage, turn=r.turn, created_at=r.created_at, prev_hash=r.prev_hash, hash=r.hash)
