"""Data of the context pipeline: projections and compaction reports."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from longrun.models.blocks import Message

Stage = Literal["trim", "microcompact", "summarize", "enforce"]
Trigger = Literal["threshold", "stage_boundary", "operator", "overflow", "offline"]
Outcome = Literal["applied", "noop", "stale", "summary_rejected", "failed"]


class TranscriptItem(BaseModel):
    """A transcript entry as the context pipeline sees it: its sequence number and its message."""

    model_config = ConfigDict(extra="forbid")

    seq: int = Field(ge=1)
    message: Message


FactKind = Literal["rule", "decision", "value", "status", "preference"]
FactSource = Literal["user", "agent", "tool", "note"]


class FactRow(BaseModel):
    """One fact of a run's fact store (`longrun.context.factstore`, table `facts`): a line of the
    transcript, verbatim, with what it is about and what it replaced.

    Append-only: a row never changes. A later row that replaces it names it in `supersedes`, so
    a row's status (current, superseded) is read, never written; a decision that rejects an
    alternative is `rejected`."""

    model_config = ConfigDict(extra="forbid")

    seq: int = Field(ge=1, description="the row's place in the run's store, 1, 2, ...")
    source_seq: int = Field(ge=0, description="the transcript entry it was read from (0: a task-state note)")
    kind: FactKind
    source: FactSource
    subject: str = Field(description="what it is about: its names and content words, values and labels aside, sorted")
    value: str = Field(default="", description="the values it states, sorted, comma-separated")
    text: str = Field(description="the line, verbatim (whitespace normalised)")
    where: str = Field(default="", description="for a tool line that names nothing itself: its call")
    count: int = Field(default=1, ge=1, description="near-identical lines it stands for")
    final: bool = Field(default=False, description="a correction's value")
    rejected: bool = False
    quoted: bool = Field(default=False, description="a short tool result's line, quoted whole on its results-index "
                         "line: it supersedes what it corrects, and the ledger does not show it twice")
    supersedes: list[int] = Field(default_factory=list, description="the rows (seq) this one replaced")


class CompactionReport(BaseModel):
    """One compaction's figures; stored with the projection and in the audit event."""

    model_config = ConfigDict(extra="forbid")

    trigger: Trigger
    stages_run: list[Stage] = Field(default_factory=list)
    tokens_before_estimated: int = 0
    tokens_before_calibrated: int = 0
    tokens_after_estimated: int = 0
    tokens_after_calibrated: int = 0
    freed_per_stage: dict[str, int] = Field(default_factory=dict)
    messages_summarized: int = 0
    summary_tokens: int = 0
    summary_source: Literal["none", "model", "extractive"] = "none"
    summary_rejected_reason: str | None = None
    ledger_facts: int = 0
    """Facts the summary's fact ledger quotes after this compaction."""
    ledger_left_out: int = 0
    """Ledger facts left out for size so far (the transcript keeps them)."""
    tail_messages: int = 0
    tail_tokens: int = 0
    cleared_results: int = 0
    dropped_messages: int = 0
    quotes_cut: int = 0
    """Quoted human messages stage 3 left out to fit the hard limit (their facts stay in the store)."""
    base_state_version: int = 0
    budget: int = 0
    target_tokens: int = 0
    """Where the compaction aimed (calibrated): the request's size it lands at or under when it can."""
    facts_target_tokens: int = 0
    """Where the fact selection may fill up to (calibrated), past `target_tokens` (`context.aim.facts_aim`)."""
    duration_ms: float = 0.0
    outcome: Outcome = "applied"

    @property
    def lossy(self) -> bool:
        return "summarize" in self.stages_run or "enforce" in self.stages_run


class Projection(BaseModel):
    """What the model is sent instead of the whole transcript, up to `covers_through_seq`:
    an optional summary plus the kept messages (some tool results cleared to references).
    Entries after `covers_through_seq` are appended verbatim when a request is rendered."""

    model_config = ConfigDict(extra="forbid")

    version: int = Field(ge=1)
    base_state_version: int = Field(ge=1)
    covers_through_seq: int = Field(ge=0)
    summary: str | None = None
    messages: list[Message] = Field(default_factory=list)
    report: CompactionReport
    summary_users: list[str] | None = Field(
        default=None,
        description="the human's messages the summary quotes verbatim, as data: the next compaction folds "
        "these forward, never what it would parse out of the summary's text (None: a projection written "
        "before, whose summary is parsed)",
    )
    new_facts: list[FactRow] = Field(
        default_factory=list,
        description="rows this compaction added to the run's fact store, to persist with the projection",
    )
