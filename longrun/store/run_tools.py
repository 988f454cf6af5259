"""A run's recorded tool list in PostgreSQL (table `run_tools`, migration 0010): written once at
the run's start, read by workers (to hold the run to it) and clients (grant, approve --edit, show).

Rules: append-only (trigger, and the app role may only SELECT and INSERT); a run's list is written
whole in one transaction, and a second writer (a retried activity, another worker) finds the rows
and returns them: the first list written is the run's.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from longrun.models.tools import RecordedTool
from longrun.store.core import StoreCore
from longrun.store.tables import RunToolRow


def _read(s: Session, run_id: str) -> list[RecordedTool]:
    rows = s.scalars(select(RunToolRow).where(RunToolRow.run_id == run_id).order_by(RunToolRow.position))
    return [RecordedTool(name=r.name, source=r.source, kind=r.kind, needs_approval=r.needs_approval,
                         schema_sha256=r.schema_sha256, input_schema=r.input_schema, description=r.description,
                         path_arg=r.path_arg, content_arg=r.content_arg) for r in rows]


class RunToolsMixin(StoreCore):
    """The tools each run was offered at its start."""

    def record_run_tools(self, run_id: str, tools: list[RecordedTool]) -> list[RecordedTool]:
        """Store `tools` as the run's list unless it has one; the run's list either way."""

        def tx(s: Session) -> list[RecordedTool]:
            self._require_run(s, run_id)
            found = _read(s, run_id)
            if found:
                return found
            stmt = insert(RunToolRow).values([
                {"run_id": run_id, "name": t.name, "position": i, "source": t.source, "kind": t.kind,
                 "needs_approval": t.needs_approval, "schema_sha256": t.schema_sha256, "input_schema": t.input_schema,
                 "description": self.redactor.redact(t.description), "path_arg": t.path_arg,
                 "content_arg": t.content_arg}
                for i, t in enumerate(tools)
            ]).on_conflict_do_nothing()
            if tools:
                s.execute(stmt)
            return _read(s, run_id)

        return self._tx("record_run_tools", tx)

    def run_tools(self, run_id: str) -> list[RecordedTool] | None:
        """The run's recorded list, or None when none was recorded (a run started before 0010)."""

        def tx(s: Session) -> list[RecordedTool] | None:
            return _read(s, run_id) or None

        return self._tx("run_tools", tx)
