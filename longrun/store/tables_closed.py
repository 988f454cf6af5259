"""The `closed_items` table (migration 0009): what a run's task state closed and moved out.

Kept apart from `longrun.store.tables` only for size; it is part of the same `Base.metadata`
(import `ClosedItemRow` from here). Rules: `longrun.store.closing`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import CheckConstraint, ForeignKey, Index, Integer, PrimaryKeyConstraint, String
from sqlalchemy.dialects.postgresql import JSON
from sqlalchemy.orm import Mapped, mapped_column

from longrun.store.tables import HASH_LEN, RUN_ID_MAX, Base, now_col

ITEM_ID_MAX = 300


class ClosedItemRow(Base):
    """One closed item of a run (append-only, hash-chained per run; the chain's count and head are
    in the run's task state, `TaskState.closed`): a settled effect, a used or expired approval, an
    ended scope, as the state held it when the write that closed it was made."""

    __tablename__ = "closed_items"

    run_id: Mapped[str] = mapped_column(String(RUN_ID_MAX), ForeignKey("runs.run_id"))
    seq: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(16), nullable=False)
    item_id: Mapped[str] = mapped_column(String(ITEM_ID_MAX), nullable=False)
    action_hash: Mapped[str | None] = mapped_column(String(HASH_LEN), nullable=True)
    call_ref: Mapped[str | None] = mapped_column(String(ITEM_ID_MAX), nullable=True)
    item: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False)
    state_version: Mapped[int] = mapped_column(Integer, nullable=False)
    created_at: Mapped[datetime] = now_col()
    prev_hash: Mapped[str] = mapped_column(String(HASH_LEN), nullable=False)
    hash: Mapped[str] = mapped_column(String(HASH_LEN), nullable=False)

    __table_args__ = (
        PrimaryKeyConstraint("run_id", "seq"),
        CheckConstraint("seq >= 1", name="seq_positive"),
        CheckConstraint("kind IN ('effect', 'approval', 'scope')", name="kind_known"),
        Index("ix_closed_items_run_id_item_id", "run_id", "item_id"),
        Index("ix_closed_items_run_id_action_hash", "run_id", "action_hash"),
    )


__all__ = ["ITEM_ID_MAX", "ClosedItemRow"]
