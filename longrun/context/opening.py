"""The first user message of a run: the objective and the constraints, verbatim."""

from __future__ import annotations

from longrun.models.blocks import Message
from longrun.models.spec import RunSpec


def opening_message(spec: RunSpec) -> Message:
    lines = [f"Objective: {spec.objective}"]
    if spec.constraints:
        lines.append("Constraints (verbatim, binding):")
        lines += [f"- {c}" for c in spec.constraints]
    if spec.allowed_commands:
        lines.append("Allowed commands (run_command argv, exact):")
        lines += [f"- {' '.join(argv)}" for argv in spec.allowed_commands]
    if spec.read_only:
        lines.append("You are a subagent: read-only tools, no approvals, no further delegation.")
    lines.append(f"Workspace: {spec.workspace}")
    return Message.user_text("\n".join(lines))
