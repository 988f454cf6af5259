"""The `run_requests` table (migration 0011): start requests over HTTP. Kept apart from
`longrun.store.tables` only for size; the same `Base.metadata`. Rules: `longrun.store.run_requests`.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import CheckConstraint, DateTime, PrimaryKeyConstraint, String, Text, UniqueConstraint, text
from sqlalchemy.orm import Mapped, mapped_column

from longrun.store.tables import HASH_LEN, RUN_ID_MAX, Base

KEY_MAX = 200
"""Characters of an `Idempotency-Key`."""


class RunRequestRow(Base):
    """One start request: started (with its key, body hash and run) or refused (with why)."""

    __tablename__ = "run_requests"

    id: Mapped[str] = mapped_column(String(32))
    principal: Mapped[str] = mapped_column(String(100), nullable=False)
    outcome: Mapped[str] = mapped_column(String(8), nullable=False)
    idempotency_key: Mapped[str | None] = mapped_column(String(KEY_MAX), nullable=True)
    request_sha256: Mapped[str | None] = mapped_column(String(HASH_LEN), nullable=True)
    run_id: Mapped[str | None] = mapped_column(String(RUN_ID_MAX), nullable=True)
    reason: Mapped[str] = mapped_column(Text, nullable=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=text("now()"),
                                                 nullable=False)

    __table_args__ = (
        PrimaryKeyConstraint("id"),
        UniqueConstraint("principal", "idempotency_key"),
        CheckConstraint("outcome IN ('started', 'refused')", name="outcome_known"),
        CheckConstraint("(outcome = 'started') = (idempotency_key IS NOT NULL AND request_sha256 IS NOT NULL "
                        "AND run_id IS NOT NULL)", name="started_has_key"),
    )


__all__ = ["KEY_MAX", "RunRequestRow"]
