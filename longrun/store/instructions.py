"""The instruction inbox: a human's `say` text is written here first, and only its id travels.

`longrun say RUN "..."` queues the text with `queue_instruction` and hands the workflow the
returned id; the activity that applies it reads the text back with `get_instruction`. So the text
is never in a workflow update payload or in Temporal's history, only in Postgres, redacted.

Rules:

- the text is redacted before it is stored (as a run's objective and constraints are), and the
  table is append-only: an instruction is never edited or withdrawn, a correction is a new one;
- ids are numbered 1, 2, ... per run, allocated while the `runs` row is locked `FOR UPDATE`, so
  concurrent `say`s to one run get distinct, dense ids. Per-run numbers rather than one global
  sequence: an id is only ever meaningful with its run (the lookup is by both, so an id of another
  run cannot be read through this one), it says nothing about other runs' traffic, and the app
  role needs no sequence privilege;
- an instruction that names no existing run, or is empty or over `MAX_INSTRUCTION_CHARS`, is
  refused before anything is written.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, insert, select
from sqlalchemy.orm import Session

from longrun.errors import RunNotFoundError
from longrun.models import utcnow
from longrun.store.core import (
    MAX_INSTRUCTION_CHARS,
    InvalidInputError,
    StoreCore,
    check_int,
    check_run_id,
    check_text,
)
from longrun.store.records import InstructionRecord
from longrun.store.tables import ACTOR_MAX, InstructionRow, RunRow, core_table


class InstructionsMixin(StoreCore):
    """Queue a human's instruction for a run, and read it back by (run, id)."""

    def queue_instruction(self, run_id: str, text: str, *, as_constraint: bool, actor: str = "human") -> int:
        """Store an instruction for the run (redacted) and return its id, the only thing the
        workflow needs to be told.

        Args:
            text: what the human said; at most `MAX_INSTRUCTION_CHARS` characters, not blank.
            as_constraint: when applied, also kept verbatim among the task state's constraints
                (not only told to the model).
            actor: who said it (recorded with it).

        Returns:
            The instruction's id: 1, 2, ... per run.

        Raises:
            InvalidInputError: bad run id, text, `as_constraint` or actor (nothing written).
            RunNotFoundError: no run has this id (nothing written).
        """
        check_run_id("run_id", run_id)
        check_text("text", text, MAX_INSTRUCTION_CHARS, nonempty=True)
        if not isinstance(as_constraint, bool):
            raise InvalidInputError(f"as_constraint: expected a bool, got {type(as_constraint).__name__}")
        check_text("actor", actor, ACTOR_MAX, nonempty=True)
        stored = self.redactor.redact(text)

        def tx(s: Session) -> int:
            if s.scalar(select(RunRow.run_id).where(RunRow.run_id == run_id).with_for_update()) is None:
                raise RunNotFoundError(run_id)
            newest = s.scalar(select(func.max(InstructionRow.instruction_id)).where(InstructionRow.run_id == run_id))
            instruction_id = (newest or 0) + 1
            s.execute(insert(core_table(InstructionRow)).values(
                run_id=run_id, instruction_id=instruction_id, text=stored, as_constraint=as_constraint, actor=actor,
                created_at=utcnow()))
            return instruction_id

        return self._tx("queue_instruction", tx)

    def get_instruction(self, run_id: str, instruction_id: int) -> InstructionRecord:
        """The instruction `instruction_id` of this run (its text as stored, i.e. redacted).

        Raises:
            InvalidInputError: `instruction_id` is not a positive integer, or this run has no
                instruction with this id (an id of another run is not one of this run's).
            RunNotFoundError: no run has this id.
        """
        check_run_id("run_id", run_id)
        check_int("instruction_id", instruction_id, minimum=1)

        def tx(s: Session) -> Any:
            row = s.execute(
                select(core_table(InstructionRow))
                .where(InstructionRow.run_id == run_id, InstructionRow.instruction_id == instruction_id)
            ).one_or_none()
            if row is None:
                self._require_run(s, run_id)
            return row

        row = self._tx("get_instruction", tx)
        if row is None:
            raise InvalidInputError(
                f"instruction_id: run {run_id!r} has no instruction {instruction_id} "
                "(ids are numbered per run: pass the id queue_instruction returned for this run)"
            )
        return InstructionRecord(run_id=row.run_id, instruction_id=row.instruction_id, text=row.text,
                                 as_constraint=row.as_constraint, actor=row.actor, created_at=row.created_at)
