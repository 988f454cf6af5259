"""What a run looks like from outside: its status, as the `status` query and the CLI show it."""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from longrun.models.context import CompactionReport
from longrun.models.provider import Usage


class RunStatus(str, Enum):
    running = "running"
    waiting_approval = "waiting_approval"
    paused = "paused"
    completed = "completed"
    failed = "failed"
    cancelled = "cancelled"

    @property
    def finished(self) -> bool:
        return self in (RunStatus.completed, RunStatus.failed, RunStatus.cancelled)


class PendingApproval(BaseModel):
    """An action waiting for a human. `state_version` is the version at which it was proposed:
    it is part of `action_hash`."""

    model_config = ConfigDict(extra="forbid")

    approval_id: str
    tool: str
    arguments: dict[str, Any]
    action_hash: str
    state_version: int
    requested_at: datetime
    expires_at: datetime
    call_seq: int | None = Field(default=None, description="the transcript entry holding the call (for edits)")
    call_id: str | None = None
    kind: Literal["approval", "budget"] = Field(
        default="approval", description="budget: the run family reached its budget (`longrun raise-budget`)")


class RunStatusView(BaseModel):
    model_config = ConfigDict(extra="forbid")

    run_id: str
    status: RunStatus
    state_version: int
    step: str
    next_action: str
    turn: int
    model: str
    pending_approval: PendingApproval | None = None
    usage: Usage = Field(default_factory=Usage)
    model_calls: int = 0
    tool_calls: int = 0
    last_compaction: CompactionReport | None = None
    reason: str = ""
    children: list[str] = Field(default_factory=list)
