"""The invariant gate's vocabulary, defined once: verdicts, tool kinds and the rules that decide.

The gate (`longrun.invariants`), its activity, the tool registry, the audit event and the
workflow all speak it; the workflow matches on these values, never on a reason's wording.
"""

from __future__ import annotations

from enum import Enum
from typing import Literal

Verdict = Literal["allow", "needs_approval", "deny"]

ToolKind = Literal["read", "effect", "state", "delegate"]
"""What a tool does: `read` nothing outside the run; `effect` changes the world (gate, ledger,
maybe an approval); `state` changes TaskState only; `delegate` starts a subagent."""

CallKind = Literal["read", "effect", "state", "delegate", "unknown"]
"""A call's tool kind as the gate saw it: `unknown` when the model named no registered tool."""


class GateRule(str, Enum):
    """The rule that decided a verdict (docs/ARCHITECTURE.md, "The invariant gate")."""

    tool = "tool"
    read = "read"
    state = "state"
    delegate = "delegate"
    head = "head"
    objective = "objective"
    step = "step"
    approval = "approval"
    approval_expired = "approval_expired"
    """The approval bound to this exact action expired unused: the run asks a human."""
    scope = "scope"
    """A standing approval (`longrun grant`) covers the call; the intent uses one of its uses."""
    effects = "effects"
    artifacts = "artifacts"
    evidence = "evidence"


PriorApproval = Literal["none", "expired", "used"]
"""What the state holds for this exact action hash besides a usable approval."""
