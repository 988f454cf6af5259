"""Runs asked for over HTTP, in PostgreSQL (table `run_requests`, migration 0011).

A start request claims its `(principal, idempotency_key)` before anything is started: the first
claim wins, and every later one (a retry, a concurrent twin) reads the winner's row, so one key
never names two runs, across console processes and restarts. A refused request is a row of its
own (`outcome = 'refused'`): the audit of a start that never made a run. Append-only.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from longrun.store.core import StoreCore
from longrun.store.tables_requests import KEY_MAX, RunRequestRow


@dataclass(frozen=True)
class RunRequest:
    principal: str
    outcome: Literal["started", "refused"]
    idempotency_key: str | None
    request_sha256: str | None
    run_id: str | None
    reason: str
    created_at: datetime


def _view(r: RunRequestRow) -> RunRequest:
    outcome: Literal["started", "refused"] = "started" if r.outcome == "started" else "refused"
    return RunRequest(r.principal, outcome, r.idempotency_key, r.request_sha256, r.run_id, r.reason, r.created_at)


class RunRequestsMixin(StoreCore):
    """Start requests over HTTP: claims by idempotency key, and refusals."""

    def claim_run_request(self, principal: str, key: str, request_sha256: str, run_id: str) -> RunRequest:
        """Claim `key` of `principal` for `run_id` unless it is claimed; the claim that holds it
        either way (compare its `request_sha256` and `run_id` with what was asked)."""

        def tx(s: Session) -> RunRequest:
            s.execute(insert(RunRequestRow).values(
                id=uuid.uuid4().hex, principal=principal, outcome="started", idempotency_key=key,
                request_sha256=request_sha256, run_id=run_id, reason="").on_conflict_do_nothing())
            row = s.scalars(select(RunRequestRow).where(RunRequestRow.principal == principal,
                                                        RunRequestRow.idempotency_key == key)).one()
            return _view(row)

        return self._tx("claim_run_request", tx)

    def run_request(self, principal: str, key: str) -> RunRequest | None:
        """The claim of `key` by `principal`, if any."""

        def tx(s: Session) -> RunRequest | None:
            row = s.scalars(select(RunRequestRow).where(RunRequestRow.principal == principal,
                                                        RunRequestRow.idempotency_key == key)).one_or_none()
            return None if row is None else _view(row)

        return self._tx("run_request", tx)

    def record_start_refusal(self, principal: str, reason: str) -> None:
        """Audit a refused start request of `principal` (there is no run to audit it in)."""

        def tx(s: Session) -> None:
            s.add(RunRequestRow(id=uuid.uuid4().hex, principal=principal, outcome="refused",
                                reason=self.redactor.redact(reason)[:4_000]))

        self._tx("record_start_refusal", tx)

    def run_requests(self, principal: str | None = None, limit: int = 100) -> list[RunRequest]:
        """Start requests, newest first (of `principal`, if given)."""

        def tx(s: Session) -> list[RunRequest]:
            q = select(RunRequestRow).order_by(RunRequestRow.created_at.desc()).limit(limit)
            if principal is not None:
                q = q.where(RunRequestRow.principal == principal)
            return [_view(r) for r in s.scalars(q)]

        return self._tx("run_requests", tx)


__all__ = ["KEY_MAX", "RunRequest", "RunRequestRow", "RunRequestsMixin"]
