"""The hash-chained logs of a run: appending to and reading its transcript and its audit events,
and the append of a state version inside a transaction that already holds the run row.

Rules:

- appends to a run's transcript and audit chains lock the `runs` row `FOR UPDATE` while they
  compute the next number and `prev_hash`, and move the head stored there (see
  `longrun.store.tables` for where heads live), all in the append's transaction;
- what is appended is redacted first (thinking blocks excepted, see `_redact_message`), and its
  size is checked before anything is written.

The payload each row's hash covers is defined in `longrun.store.chain`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ValidationError
from sqlalchemy import func, insert, select
from sqlalchemy.orm import Session

from longrun.errors import StoreError
from longrun.models import AuditEvent, Message, Usage, audit_event_adapter, chain_hash, utcnow
from longrun.store.chain import audit_payload, state_version_payload, transcript_payload
from longrun.store.core import (
    MAX_EVENT_BYTES,
    MAX_MESSAGE_BYTES,
    InvalidInputError,
    StoreCore,
    _check_int,
    _check_size,
    _check_text,
    _fields,
    _validate,
)
from longrun.store.records import AuditRecord, TranscriptRecord
from longrun.store.tables import ACTOR_MAX, AuditEventRow, TaskStateVersionRow, TranscriptEntryRow, core_table


class ChainedLogsMixin(StoreCore):
    """Transcript and audit: append-only, hash-chained, numbered 1, 2, ... per run."""

    # ------------------------------------------------------------------ state versions

    @staticmethod
    def _append_state_version(
        s: Session, run: Any, version: int, state_json: Any, actor: str, reason: str, now: datetime
    ) -> None:
        """Append `version` to the state chain of `run` (a row from `_lock_run`, locked by this
        transaction). Only for state v1, written with the run; later versions are appended by the
        compare-and-set statement itself (see `longrun.store.state`)."""
        prev = run.state_head
        digest = chain_hash(prev, state_version_payload(run.run_id, version, state_json, actor, reason, now))
        s.execute(insert(core_table(TaskStateVersionRow)).values(
            run_id=run.run_id, version=version, state=state_json, actor=actor, reason=reason, created_at=now,
            prev_hash=prev, hash=digest))
        StoreCore._move_head(s, run.run_id, "state", digest, version)

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
        msg, content, usage_json = self._transcript_entry(message, token_estimate, usage, turn)

        def tx(s: Session) -> int:
            run = self._lock_run(s, run_id)
            return self._append_transcript_entry(s, run, msg.role, content, token_estimate, usage_json, turn,
                                                 utcnow())

        return self._tx("append_transcript", tx)

    def _transcript_entry(
        self, message: Any, token_estimate: Any, usage: Any, turn: Any, *, what: str = "transcript message",
        field: str = "message", estimate_field: str = "token_estimate",
    ) -> tuple[Message, dict[str, Any], dict[str, Any] | None]:
        """Check and redact a transcript entry before any transaction starts: the parsed
        message, its redacted JSON content (what is stored and hashed) and the usage JSON.
        `what`, `field` and `estimate_field` are how an error names the message and the arguments.

        Raises:
            InvalidInputError: bad message, token estimate, usage or turn, or the message is too big.
        """
        msg: Message = _validate(Message, message, what)
        _check_int(estimate_field, token_estimate, minimum=0)
        _check_int("turn", turn, minimum=0, optional=True)
        usage_json = None if usage is None else _validate(Usage, usage, "usage").model_dump(mode="json")
        content = self._redact_message(msg.model_dump(mode="json"))
        _check_size(field, content, MAX_MESSAGE_BYTES, "store large tool output as an artifact and reference it")
        return msg, content, usage_json

    @staticmethod
    def _append_transcript_entry(
        s: Session, run: Any, role: str, content: dict[str, Any], token_estimate: int,
        usage_json: dict[str, Any] | None, turn: int | None, now: datetime,
    ) -> int:
        """Append a checked entry (from `_transcript_entry`) to the transcript chain of `run` (a
        row from `_lock_run`, locked by this transaction). Returns its sequence number."""
        seq = run.transcript_count + 1
        prev = run.transcript_head
        digest = chain_hash(
            prev, transcript_payload(run.run_id, seq, role, content, token_estimate, usage_json, turn, now)
        )
        s.execute(insert(core_table(TranscriptEntryRow)).values(
            run_id=run.run_id, seq=seq, role=role, content=content, token_estimate=token_estimate,
            usage=usage_json, turn=turn, created_at=now, prev_hash=prev, hash=digest))
        StoreCore._move_head(s, run.run_id, "transcript", digest, seq)
        return int(seq)

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
        s.execute(insert(core_table(AuditEventRow)).values(
            run_id=run.run_id, seq=seq, kind=event.kind, event=data, actor=actor, created_at=now,
            prev_hash=prev, hash=digest))
        StoreCore._move_head(s, run.run_id, "audit", digest, seq)
        return int(seq)

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
