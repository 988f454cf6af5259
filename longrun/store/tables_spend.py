"""The spend ledger's tables (migration 0012): one row per model request, and the raises of a
run family's budget. Same `Base.metadata` as `longrun.store.tables`. Rules: `longrun.store.spend`.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import (
    JSON,
    CheckConstraint,
    DateTime,
    ForeignKey,
    Integer,
    Numeric,
    PrimaryKeyConstraint,
    String,
    Text,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from longrun.store.tables import RUN_ID_MAX, Base

MODEL_MAX = 500
DOLLARS = Numeric(18, 9)
"""Dollars to the nano-dollar: a request's cost is a sum of token counts times per-million prices."""


class ModelRequestRow(Base):
    """One request to a model: written `sent` before the provider is called, `answered` with the
    usage and its cost when the answer is saved. Keyed per turn, overflow retry and activity
    attempt, so a retried activity finds its own row instead of adding one."""

    __tablename__ = "model_requests"

    run_id: Mapped[str] = mapped_column(String(RUN_ID_MAX), ForeignKey("runs.run_id"))
    turn: Mapped[int] = mapped_column(Integer)
    overflow_retry: Mapped[int] = mapped_column(Integer)
    attempt: Mapped[int] = mapped_column(Integer)
    root_run_id: Mapped[str] = mapped_column(String(RUN_ID_MAX), nullable=False, index=True)
    model: Mapped[str] = mapped_column(String(MODEL_MAX), nullable=False)
    status: Mapped[str] = mapped_column(String(8), nullable=False)
    usage: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    cost_usd: Mapped[Decimal | None] = mapped_column(DOLLARS, nullable=True)
    priced: Mapped[bool] = mapped_column(nullable=False)
    transcript_seq: Mapped[int | None] = mapped_column(Integer, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=text("now()"), nullable=False)
    answered_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)

    __table_args__ = (
        PrimaryKeyConstraint("run_id", "turn", "overflow_retry", "attempt"),
        CheckConstraint("status IN ('sent', 'answered', 'failed')", name="status_known"),
        CheckConstraint("priced OR cost_usd IS NULL", name="unpriced_has_no_cost"),
    )


class BudgetRaiseRow(Base):
    """A signed raise of a run family's budget, once per budget request."""

    __tablename__ = "budget_raises"

    root_run_id: Mapped[str] = mapped_column(String(RUN_ID_MAX), ForeignKey("runs.run_id"))
    request_id: Mapped[str] = mapped_column(String(100))
    run_id: Mapped[str] = mapped_column(String(RUN_ID_MAX), nullable=False)
    by_usd: Mapped[Decimal] = mapped_column(DOLLARS, nullable=False)
    approver: Mapped[str] = mapped_column(String(100), nullable=False)
    reason: Mapped[str] = mapped_column(Text, nullable=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=text("now()"), nullable=False)

    __table_args__ = (
        PrimaryKeyConstraint("root_run_id", "request_id"),
        CheckConstraint("by_usd > 0", name="positive"),
    )
