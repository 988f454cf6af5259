"""Runs: creating one (its row, state v1, the first state version, the `RunStarted` audit event
and the opening message, in one transaction), reading and listing them, and the mutable columns
of the `runs` row (status and reason, token-estimator calibration).

Rules:

- `create_run` is one transaction. The run's row is inserted with the heads of its three chains
  already set (they are computed before anything is written, on the genesis hash), and after it
  commits the store remembers those heads, so the run's first compare-and-set and appends need
  no read of them;
- reading a run (`get_run`, `load_spec`, `get_calibration`) is one statement, and so is each
  change of its row (`set_run_status`, `set_calibration`: an `UPDATE ... RETURNING` whose empty
  answer means the run does not exist);
- the run's objective and constraints are redacted before they are stored, in the spec, the state
  and the audit event alike.
"""

from __future__ import annotations

from typing import Any

import psycopg
from pydantic import ValidationError
from sqlalchemy import insert, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from longrun.errors import RunExistsError, RunNotFoundError, StoreError
from longrun.models import GENESIS_HASH, Message, RunSpec, RunStatus, TaskState, chain_hash, utcnow
from longrun.models.audit import RunStarted
from longrun.models.mcp import STORED_SPEC
from longrun.models.state import MAX_TEXT
from longrun.store.audit import AuditMixin
from longrun.store.chain import state_version_payload
from longrun.store.core import (
    MAX_EVENT_BYTES,
    calibration_json,
    check_int,
    check_run_id,
    check_size,
    check_status,
    check_text,
    fetch_one,
    fields,
    sqlstate_of,
    validate,
)
from longrun.store.records import RunRecord
from longrun.store.tables import (
    ACTOR_MAX,
    AuditEventRow,
    RunRow,
    TaskStateRow,
    TaskStateVersionRow,
    TranscriptEntryRow,
    core_table,
)
from longrun.store.transcript import TranscriptMixin

_GET_SQL = ("SELECT run_id, spec, model, status, reason, parent_run_id, created_at, updated_at "
            "FROM runs WHERE run_id = %(run_id)s")


class RunsMixin(TranscriptMixin, AuditMixin):
    """The `runs` row of each run; creating a run appends to its state and audit chains."""

    def create_run(
        self,
        run_id: str,
        spec: RunSpec,
        *,
        parent_run_id: str | None = None,
        actor: str = "operator",
        opening: Message | None = None,
        opening_token_estimate: int = 0,
    ) -> TaskState:
        """Create a run: its row, head state v1 (objective and constraints from the spec), the
        first state version, a `RunStarted` audit event and, when `opening` is given, the opening
        message as transcript entry 1 (turn 0), in one transaction.

        The opening message is written with the run rather than by a later `append_transcript`
        because a crash between the two would leave a run that has no opening message, and a
        caller that treats "the run exists" as "the run was created" would never add it. It is
        redacted and hash-chained exactly as `append_transcript` does; `opening_token_estimate` is
        its token estimate (unused without `opening`).

        Returns:
            The stored state v1.

        Raises:
            InvalidInputError: bad run id, spec, actor, opening message or its token estimate
                (nothing written).
            RunExistsError: a run with this id already exists (nothing written).
            RunNotFoundError: `parent_run_id` names no run (nothing written).
        """
        check_run_id("run_id", run_id)
        if parent_run_id is not None:
            check_run_id("parent_run_id", parent_run_id)
        check_text("actor", actor, ACTOR_MAX, nonempty=True)
        first = None if opening is None else self._transcript_entry(
            opening, opening_token_estimate, None, 0,
            what="opening message", field="opening", estimate_field="opening_token_estimate",
        )
        spec = validate(RunSpec, spec, "run spec")
        spec = spec.model_copy(update={"objective": self.redactor.redact(spec.objective),
                                       "constraints": [self.redactor.redact(c) for c in spec.constraints]})
        now = utcnow()
        state: TaskState = validate(
            TaskState,
            {"run_id": run_id, "state_version": 1, "objective": spec.objective,
             "constraints": list(spec.constraints), "updated_at": now},
            "initial state",
        )
        state_json = state.model_dump(mode="json")
        spec_json = spec.model_dump(mode="json")
        started = RunStarted(
            model=spec.model, objective=spec.objective, constraints=list(spec.constraints),
            workspace=spec.workspace, approvers=list(spec.approvers),
        )
        started_json = started.model_dump(mode="json")
        check_size("event", started_json, MAX_EVENT_BYTES, "audit events carry references, not content")
        # every chain starts on the genesis hash, so the heads are known before anything is written
        state_head = chain_hash(GENESIS_HASH, state_version_payload(run_id, 1, state_json, actor, "run created", now))
        audit_head = self._audit_hash(run_id, 1, GENESIS_HASH, started.kind, started_json, actor, now)
        transcript = (0, GENESIS_HASH) if first is None else (1, self._transcript_hash(
            run_id, 1, GENESIS_HASH, first[0].role, first[1], opening_token_estimate, None, 0, now))

        def tx(s: Session) -> None:
            try:
                # a duplicate id fails here (unique index) before the parent is checked (foreign key)
                s.execute(insert(core_table(RunRow)).values(
                    run_id=run_id, spec=spec_json, model=spec.model, status=RunStatus.running.value, reason="",
                    parent_run_id=parent_run_id, created_at=now, updated_at=now,
                    state_head=state_head, state_count=1, audit_head=audit_head, audit_count=1,
                    transcript_head=transcript[1], transcript_count=transcript[0]))
            except IntegrityError as exc:
                if sqlstate_of(exc) == "23505":
                    raise RunExistsError(run_id) from exc
                if sqlstate_of(exc) == "23503" and parent_run_id is not None:
                    raise RunNotFoundError(parent_run_id) from exc
                raise
            s.execute(insert(core_table(TaskStateRow)).values(
                run_id=run_id, state_version=1, state=state_json, updated_at=now))
            s.execute(insert(core_table(TaskStateVersionRow)).values(
                run_id=run_id, version=1, state=state_json, actor=actor, reason="run created", created_at=now,
                prev_hash=GENESIS_HASH, hash=state_head))
            s.execute(insert(core_table(AuditEventRow)).values(
                run_id=run_id, seq=1, kind=started.kind, event=started_json, actor=actor, created_at=now,
                prev_hash=GENESIS_HASH, hash=audit_head))
            if first is not None:
                s.execute(insert(core_table(TranscriptEntryRow)).values(
                    run_id=run_id, seq=1, role=first[0].role, content=first[1], token_estimate=opening_token_estimate,
                    usage=None, turn=0, created_at=now, prev_hash=GENESIS_HASH, hash=transcript[1]))

        self._tx("create_run", tx)
        self._remember_head(run_id, 1, state_head)
        self._remember_head(run_id, 1, audit_head, "audit")
        self._remember_head(run_id, *transcript, "transcript")
        return state

    @staticmethod
    def _run_record(row: Any) -> RunRecord:
        """A `RunRecord` of a `runs` row (an ORM row or a named tuple with its columns)."""
        try:
            spec = RunSpec.model_validate(row.spec, context=STORED_SPEC)  # old MCP entries load, never run
        except ValidationError as exc:
            raise StoreError(f"stored spec of run {row.run_id} does not parse: {fields(exc)}") from exc
        return RunRecord(
            run_id=row.run_id, spec=spec, model=row.model, status=row.status, reason=row.reason,
            parent_run_id=row.parent_run_id, created_at=row.created_at, updated_at=row.updated_at,
        )

    def get_run(self, run_id: str) -> RunRecord:
        """Raises:
        RunNotFoundError: no run has this id."""

        def read(c: psycopg.Connection) -> RunRecord:
            row = fetch_one(c, _GET_SQL, {"run_id": run_id})
            if row is None:
                raise RunNotFoundError(run_id)
            return self._run_record(row)

        return self._autocommit("get_run", read)

    def list_runs(self, limit: int = 50, parent_run_id: str | None = None) -> list[RunRecord]:
        """Newest runs first; only the children of `parent_run_id` when it is given."""
        check_int("limit", limit, minimum=1)

        def tx(s: Session) -> list[RunRecord]:
            q = select(RunRow).order_by(RunRow.created_at.desc(), RunRow.run_id).limit(limit)
            if parent_run_id is not None:
                q = q.where(RunRow.parent_run_id == parent_run_id)
            return [self._run_record(r) for r in s.scalars(q)]

        return self._tx("list_runs", tx)

    def set_run_status(self, run_id: str, status: str | RunStatus, reason: str = "") -> None:
        """Record where a run stands (`running`, `paused`, `completed`, ...) and why.

        Raises:
            InvalidInputError: unknown status or oversized reason.
            RunNotFoundError: no run has this id.
        """
        value = check_status(status).value
        check_text("reason", reason, MAX_TEXT)

        self._update_run("set_run_status", run_id, "status = %(status)s, reason = %(reason)s",
                         {"status": value, "reason": reason})

    def _update_run(self, what: str, run_id: str, assignments: str, params: dict[str, Any]) -> None:
        """One `UPDATE runs SET <assignments>, updated_at = now` of the run, in one statement."""
        sql = f"UPDATE runs SET {assignments}, updated_at = %(now)s WHERE run_id = %(run_id)s RETURNING run_id"

        def write(c: psycopg.Connection) -> None:
            if c.execute(sql, {**params, "run_id": run_id, "now": utcnow()}).fetchone() is None:
                raise RunNotFoundError(run_id)

        self._autocommit(what, write)

    def load_spec(self, run_id: str) -> RunSpec:
        return self.get_run(run_id).spec

    def get_calibration(self, run_id: str) -> dict[str, Any]:
        """The run's token-estimator calibration (empty until first set)."""

        def read(c: psycopg.Connection) -> dict[str, Any]:
            row = c.execute("SELECT calibration FROM runs WHERE run_id = %(run_id)s", {"run_id": run_id}).fetchone()
            if row is None:
                raise RunNotFoundError(run_id)
            return dict(row[0])

        return self._autocommit("get_calibration", read)

    def set_calibration(self, run_id: str, data: dict[str, Any]) -> None:
        """Replace the run's calibration data (a JSON object)."""
        text = calibration_json(data)
        self._update_run("set_calibration", run_id, "calibration = %(calibration)s::jsonb", {"calibration": text})
