"""What the store hands back: plain, immutable records of rows, parsed into the shared models."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from longrun.errors import ChainBroken
from longrun.models import AuditEvent, Message, RunSpec, TaskState, Usage


@dataclass(frozen=True)
class RunRecord:
    """A row of `runs`: what was asked for and where the run stands."""

    run_id: str
    spec: RunSpec
    model: str
    status: str
    reason: str
    parent_run_id: str | None
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class StateVersionRecord:
    """One version of a run's task state, with who wrote it, why, and its link in the chain."""

    version: int
    state: TaskState
    actor: str
    reason: str
    created_at: datetime
    prev_hash: str
    hash: str


@dataclass(frozen=True)
class TranscriptRecord:
    """One transcript entry. `seq` numbers a run's entries 1, 2, ... without gaps."""

    seq: int
    role: str
    message: Message
    token_estimate: int
    usage: Usage | None
    turn: int | None
    created_at: datetime
    prev_hash: str = ""
    hash: str = ""


@dataclass(frozen=True)
class AuditRecord:
    """One audit event as stored: the parsed event plus its link in the chain."""

    seq: int
    kind: str
    event: AuditEvent
    actor: str
    created_at: datetime
    prev_hash: str
    hash: str


@dataclass(frozen=True)
class ChainVerdict:
    """Outcome of `Store.verify_chain`: ok, or the first bad row (table and row number) and why.

    `str(verdict)` is one line a human can act on.
    """

    ok: bool
    table: str | None
    row: int | None
    reason: str
    run_id: str = ""

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        if self.ok:
            return f"run {self.run_id}: hash chains verify ({self.reason})"
        return f"run {self.run_id}: hash chain broken in {self.table} at row {self.row}: {self.reason}"

    def raise_if_broken(self) -> None:
        """Raises:
        ChainBroken: when the verdict is not ok (the message names the first bad row)."""
        if not self.ok:
            raise ChainBroken(str(self))


@dataclass(frozen=True)
class InstructionRecord:
    """One instruction a human queued for a run (`say`), as stored: its text already redacted.
    `instruction_id` numbers a run's instructions 1, 2, ...; it means nothing without `run_id`."""

    run_id: str
    instruction_id: int
    text: str
    as_constraint: bool
    actor: str
    created_at: datetime
