"""Forks in PostgreSQL (table `run_lineage`, migration 0013): making one, and reading who forked
from whom.

Rules:

- a fork is created in one transaction: its `runs` row (the transcript head already set to the
  parent's entry at the fork point), its state v1 and first state version, its `run_started` and
  `forked_from` audit events, the lineage row, the run's links to the parent's artifacts and
  tools, and the projection (and its facts) the parent had at the fork point. A crash leaves the
  fork whole or absent; the parent's `run_forked` event is appended after it commits (a crash in
  between leaves the lineage row, which `forks` reads, as the record);
- the transcript is never copied: the fork's own entries are numbered after the fork point and
  chained on the parent's entry there, and every transcript read follows `run_lineage`
  (`longrun.store.transcript.VISIBLE_ENTRIES`);
- `run_lineage` is append-only: a run's parentage never changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import insert, select, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from longrun.errors import RunExistsError, RunNotFoundError
from longrun.models import GENESIS_HASH, RunSpec, RunStatus, TaskState, chain_hash, utcnow
from longrun.models.audit import ForkedFrom, RunStarted
from longrun.store.chain import state_version_payload
from longrun.store.core import MAX_EVENT_BYTES, check_run_id, check_size, sqlstate_of, validate
from longrun.store.runs import RunsMixin
from longrun.store.tables import AuditEventRow, RunRow, TaskStateRow, TaskStateVersionRow, core_table
from longrun.store.tables_lineage import RunLineageRow


@dataclass(frozen=True)
class LineageRecord:
    """A fork: `run_id` starts from `parent_run_id` at state version `parent_version`, reads its
    transcript through entry `parent_through_seq`, and (on git) its branch from `parent_commit`."""

    run_id: str
    parent_run_id: str
    parent_version: int
    parent_through_seq: int
    parent_commit: str | None
    created_by: str
    created_at: datetime


@dataclass(frozen=True)
class ForkPoint:
    """Where a fork starts, as `longrun.client.fork` chose it from the parent's record."""

    parent_run_id: str
    version: int
    through_seq: int
    commit: str | None
    projection_version: int | None
    linked_before: datetime | None = None
    """The parent's artifact links made by then (the fork point's time) are the fork's too: the
    transcript's references resolve, and nothing the parent stored later does (None: all)."""
    """The parent's projection current at the fork point (None: it had not compacted yet); the
    fork gets it, and the facts saved with it, as its own projection 1."""


def _record(r: RunLineageRow) -> LineageRecord:
    return LineageRecord(r.run_id, r.parent_run_id, r.parent_version, r.parent_through_seq, r.parent_commit,
                         r.created_by, r.created_at)


class LineageMixin(RunsMixin):
    """`run_lineage`: forks and their parents."""

    def lineage(self, run_id: str) -> LineageRecord | None:
        """The fork point of `run_id` (None: it is no fork)."""

        def tx(s: Session) -> LineageRecord | None:
            row = s.get(RunLineageRow, run_id)
            return None if row is None else _record(row)

        return self._tx("lineage", tx)

    def forks(self, run_id: str) -> list[LineageRecord]:
        """The forks made from `run_id`, oldest first."""

        def tx(s: Session) -> list[LineageRecord]:
            q = select(RunLineageRow).where(RunLineageRow.parent_run_id == run_id).order_by(RunLineageRow.created_at)
            return [_record(r) for r in s.scalars(q)]

        return self._tx("forks", tx)

    def lineage_among(self, run_ids: list[str]) -> list[LineageRecord]:
        """The lineage rows that name any of `run_ids` as fork or parent (for `runs --tree`)."""

        def tx(s: Session) -> list[LineageRecord]:
            q = select(RunLineageRow).where(RunLineageRow.run_id.in_(run_ids) | RunLineageRow.parent_run_id.in_(run_ids))
            return [_record(r) for r in s.scalars(q.order_by(RunLineageRow.created_at))]

        return self._tx("lineage_among", tx) if run_ids else []

    def create_fork(self, run_id: str, spec: RunSpec, state: TaskState, point: ForkPoint, *, actor: str,
                    objective_replaced: bool = False) -> TaskState:
        """Create the fork `run_id` of `point.parent_run_id` (see the module's rules) with `spec`
        and `state` as its state v1 (the caller has dropped what must not be carried).

        Returns:
            The stored state v1.

        Raises:
            RunExistsError: a run with `run_id` exists (nothing written).
            RunNotFoundError: the parent does not exist.
            InvalidInputError: bad id, spec or state (nothing written).
        """
        check_run_id("run_id", run_id)
        spec = validate(RunSpec, spec, "run spec")
        red = self.redactor.redact
        spec = spec.model_copy(update={"objective": red(spec.objective), "constraints": [red(c) for c in spec.constraints]})
        state = state.model_copy(update={"objective": red(state.objective)})
        parent = point.parent_run_id
        head_entry = self.transcript(parent, after_seq=max(0, point.through_seq - 1), through_seq=point.through_seq)
        transcript_head = head_entry[0].hash if point.through_seq else GENESIS_HASH
        if point.through_seq and (not head_entry or head_entry[0].seq != point.through_seq):
            raise RunNotFoundError(f"{parent} (transcript entry {point.through_seq})")
        now = utcnow()
        state = validate(TaskState, state.model_copy(update={"run_id": run_id, "state_version": 1, "updated_at": now}),
                         "fork state")
        state_json = state.model_dump(mode="json")
        spec_json = spec.model_dump(mode="json")
        events: list[Any] = [
            RunStarted(model=spec.model, objective=spec.objective, constraints=list(spec.constraints),
                       workspace=spec.workspace, approvers=list(spec.approvers)),
            ForkedFrom(parent_run_id=parent, parent_version=point.version, parent_through_seq=point.through_seq,
                       commit=point.commit, model=spec.model, objective_replaced=objective_replaced, by=actor),
        ]
        reason = f"forked from {parent} at state v{point.version}"
        state_head = chain_hash(GENESIS_HASH, state_version_payload(run_id, 1, state_json, actor, reason, now))
        audit_rows = []
        prev = GENESIS_HASH
        for seq, event in enumerate(events, start=1):
            data = event.model_dump(mode="json")
            check_size("event", data, MAX_EVENT_BYTES, "audit events carry references, not content")
            digest = self._audit_hash(run_id, seq, prev, event.kind, data, actor, now)
            audit_rows.append({"run_id": run_id, "seq": seq, "kind": event.kind, "event": data, "actor": actor,
                               "created_at": now, "prev_hash": prev, "hash": digest})
            prev = digest

        def tx(s: Session) -> None:
            try:
                s.execute(insert(core_table(RunRow)).values(
                    run_id=run_id, spec=spec_json, model=spec.model, status=RunStatus.running.value, reason="",
                    parent_run_id=None, created_at=now, updated_at=now,
                    state_head=state_head, state_count=1, audit_head=prev, audit_count=len(audit_rows),
                    transcript_head=transcript_head, transcript_count=point.through_seq))
            except IntegrityError as exc:
                if sqlstate_of(exc) == "23505":
                    raise RunExistsError(run_id) from exc
                raise
            s.execute(insert(core_table(TaskStateRow)).values(
                run_id=run_id, state_version=1, state=state_json, updated_at=now))
            s.execute(insert(core_table(TaskStateVersionRow)).values(
                run_id=run_id, version=1, state=state_json, actor=actor, reason=reason, created_at=now,
                prev_hash=GENESIS_HASH, hash=state_head))
            s.execute(insert(core_table(AuditEventRow)), audit_rows)
            try:
                s.add(RunLineageRow(run_id=run_id, parent_run_id=parent, parent_version=point.version,
                                    parent_through_seq=point.through_seq, parent_commit=point.commit,
                                    created_by=actor, created_at=now))
                s.flush()
            except IntegrityError as exc:
                if sqlstate_of(exc) == "23503":
                    raise RunNotFoundError(parent) from exc
                raise
            params = {"run": run_id, "parent": parent, "now": now}
            # the parent's artifacts and tools, as they were at the fork point: the transcript's
            # references resolve, and the fork is held to the tools its parent was offered
            s.execute(text("INSERT INTO run_artifacts (run_id, sha256, created_at) SELECT :run, sha256, :now "
                           "FROM run_artifacts WHERE run_id = :parent AND created_at <= coalesce(:before, :now)"),
                      {**params, "before": point.linked_before})
            s.execute(text(
                "INSERT INTO run_tools (run_id, name, position, source, kind, needs_approval, schema_sha256, "
                "input_schema, description, path_arg, content_arg, created_at) SELECT :run, name, position, source, "
                "kind, needs_approval, schema_sha256, input_schema, description, path_arg, content_arg, :now "
                "FROM run_tools WHERE run_id = :parent"), params)
            if point.projection_version is not None:
                pv = {**params, "pv": point.projection_version}
                s.execute(text(
                    "INSERT INTO projections (run_id, version, base_state_version, covers_through_seq, content, report, "
                    "created_at) SELECT :run, 1, 1, covers_through_seq, content, report, :now FROM projections "
                    "WHERE run_id = :parent AND version = :pv"), pv)
                s.execute(text(
                    "INSERT INTO facts (run_id, seq, source_seq, kind, source, subject, value, text, where_call, count, "
                    "final, rejected, quoted, supersedes, projection_version, created_at) SELECT :run, seq, source_seq, "
                    "kind, source, subject, value, text, where_call, count, final, rejected, quoted, supersedes, 1, :now "
                    "FROM facts WHERE run_id = :parent AND projection_version <= :pv"), pv)

        self._tx("create_fork", tx)
        self._remember_head(run_id, 1, state_head)
        self._remember_head(run_id, len(audit_rows), prev, "audit")
        self._remember_head(run_id, point.through_seq, transcript_head, "transcript")
        return state


__all__ = ["ForkPoint", "LineageMixin", "LineageRecord"]
