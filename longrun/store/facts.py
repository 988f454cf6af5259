"""A run's fact store in PostgreSQL (table `facts`, migration 0008): read it whole, and add the
rows a compaction returns, in the transaction that saves its projection.

Rules:

- append-only: rows are inserted, never updated or deleted (trigger, and the app role's grants);
  a row's status is read from the rows that name it in `supersedes`;
- rows are added only with the projection that produced them (`save_projection` calls
  `insert_facts` in its transaction), so a stale compaction leaves none, and a row's seq is the
  next after the run's newest (the primary key refuses a second writer);
- the text, subject and value are redacted like the projection's summary before they are stored.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import ValidationError
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from longrun.errors import StoreError
from longrun.models.context import FactRow
from longrun.store.core import StoreCore
from longrun.store.tables import FactStoreRow


class FactsMixin(StoreCore):
    """The fact store's rows by run."""

    def facts(self, run_id: str) -> list[FactRow]:
        """Every row of the run's fact store, oldest first (current and superseded)."""

        def tx(s: Session) -> list[FactRow]:
            self._require_run(s, run_id)
            rows = s.scalars(select(FactStoreRow).where(FactStoreRow.run_id == run_id).order_by(FactStoreRow.seq))
            try:
                return [FactRow(seq=r.seq, source_seq=r.source_seq, kind=r.kind, source=r.source,
                                subject=r.subject, value=r.value, text=r.text, where=r.where_call, count=r.count,
                                final=r.final, rejected=r.rejected, quoted=r.quoted, supersedes=list(r.supersedes))
                        for r in rows]
            except ValidationError as exc:
                raise StoreError(f"a fact row of run {run_id} does not parse: {exc}") from exc

        return self._tx("facts", tx)

    def insert_facts(self, s: Session, run_id: str, rows: Sequence[FactRow], projection_version: int) -> None:
        """Add `rows` inside the caller's transaction. Their seqs must follow the run's newest row:
        a compaction computed them from the store it read, so a gap or an overlap means another
        writer got there first, which the caller reports as stale."""
        if not rows:
            return
        newest = s.scalar(select(func.max(FactStoreRow.seq)).where(FactStoreRow.run_id == run_id)) or 0
        if rows[0].seq != newest + 1:
            raise StoreError(f"fact rows of run {run_id} start at {rows[0].seq}, the store's next is {newest + 1}: "
                             "the compaction read an older store; run it again")
        red = self.redactor.redact
        s.add_all(FactStoreRow(run_id=run_id, seq=r.seq, source_seq=r.source_seq, kind=r.kind, source=r.source,
                               subject=red(r.subject), value=red(r.value), text=red(r.text), where_call=red(r.where),
                               count=r.count, final=r.final, rejected=r.rejected, quoted=r.quoted, supersedes=list(r.supersedes),
                               projection_version=projection_version) for r in rows)
