"""The `run_lineage` table (migration 0013): which run a fork was made from, and where. Kept apart
from `longrun.store.tables` only for size; the same `Base.metadata`. Rules: `longrun.store.lineage`.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import CheckConstraint, DateTime, ForeignKey, Integer, String, text
from sqlalchemy.orm import Mapped, mapped_column

from longrun.store.tables import ACTOR_MAX, RUN_ID_MAX, Base


class RunLineageRow(Base):
    """One fork: the run (`run_id`) starts from `parent_run_id`'s state version `parent_version`,
    and its transcript is the parent's entries 1..`parent_through_seq` (read through this row, never
    copied); `parent_commit` is the commit its git branch started from (None: no change set).
    Append-only: a run's parentage never changes."""

    __tablename__ = "run_lineage"

    run_id: Mapped[str] = mapped_column(String(RUN_ID_MAX), ForeignKey("runs.run_id"), primary_key=True)
    parent_run_id: Mapped[str] = mapped_column(String(RUN_ID_MAX), ForeignKey("runs.run_id"), nullable=False,
                                               index=True)
    parent_version: Mapped[int] = mapped_column(Integer, nullable=False)
    parent_through_seq: Mapped[int] = mapped_column(Integer, nullable=False)
    parent_commit: Mapped[str | None] = mapped_column(String(64), nullable=True)
    created_by: Mapped[str] = mapped_column(String(ACTOR_MAX), nullable=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=text("now()"),
                                                 nullable=False)

    __table_args__ = (
        CheckConstraint("parent_version >= 1", name="version_positive"),
        CheckConstraint("parent_through_seq >= 0", name="through_nonnegative"),
        CheckConstraint("run_id <> parent_run_id", name="not_own_parent"),
    )


__all__ = ["RunLineageRow"]
