"""Subagent activities: create a child run from a `task` call, collect its short answer.

A child is an ordinary run in Postgres (its own transcript, state and audit, `parent_run_id` set)
with read-only tools, the parent's constraints copied verbatim and its own caps. The parent's
context grows by the child's FINDINGS / UNCERTAIN answer only.
"""

from __future__ import annotations

import contextlib

from longrun.activities.base import ActivityBase
from longrun.activities.contract import Activities, implements
from longrun.context.opening import opening_message
from longrun.context.tokens import estimate_message
from longrun.errors import RunExistsError, RunNotFoundError
from longrun.models.audit import ToolRan
from longrun.models.io import ChildCollected, ChildCreated, ChildInput, CollectChildInput, ToolResultRef
from longrun.models.provider import Usage
from longrun.models.spec import RunSpec
from longrun.subagents import child_objective, shape_answer


def child_run_id(parent_run_id: str, turn: int, index: int) -> str:
    return f"{parent_run_id}.t{turn}c{index}"


class ChildActivities(ActivityBase):
    @implements(Activities.create_child)
    def create_child(self, inp: ChildInput) -> ChildCreated:
        """Create the child run from the parent's `task` call, with its opening message in the
        same transaction. Idempotent: a retry finds the run (and so its opening message)."""
        child_id = child_run_id(inp.run_id, inp.turn, inp.call.index)
        try:
            self.store.get_run(child_id)
            return ChildCreated(child_run_id=child_id)
        except RunNotFoundError:
            pass
        parent = self.spec(inp.run_id)
        _, arguments = self.tool_call(inp.run_id, inp.call)
        paths = [str(p) for p in arguments.get("paths") or []]
        objective = child_objective(str(arguments.get("brief", "")), paths)
        spec = RunSpec(
            objective=objective,
            constraints=list(self.head(inp.run_id).constraints),
            workspace=str(self.workspace_of(inp.run_id)),  # the parent's worktree when it has a change set
            approvers=[],
            allowed_commands=[],
            model=parent.subagent_model or parent.model,
            base_url=parent.base_url,
            context_window=parent.context_window,
            context=parent.context,
            caps=parent.subagent_caps.model_copy(update={"max_cost": parent.caps.max_cost}),  # the family's budget
            read_only=True,
            subagent_width=1,
            command_timeout_seconds=parent.command_timeout_seconds,
            continue_as_new_every=parent.continue_as_new_every,
        )
        message = opening_message(spec)
        with contextlib.suppress(RunExistsError):  # another attempt created it meanwhile, opening included
            self.store.create_run(
                child_id, spec, parent_run_id=inp.run_id, actor=f"run:{inp.run_id}",
                opening=message, opening_token_estimate=estimate_message(message),
            )
        return ChildCreated(child_run_id=child_id)

    @implements(Activities.collect_child)
    def collect_child(self, inp: CollectChildInput) -> ChildCollected:
        """The child's answer as the parent's tool result, and the tokens it spent."""
        record = self.store.get_run(inp.child_run_id)
        entries = self.store.transcript(inp.child_run_id)
        usage = Usage()
        for entry in entries:
            if entry.usage is not None:
                usage = usage + entry.usage
        failure = inp.failure or (None if record.status == "completed" else f"{record.status}: {record.reason}")
        if failure:
            text, is_error = f"worker failed: {failure}", True
        else:
            answers = [e.message.text() for e in entries if e.role == "assistant" and e.message.text().strip()]
            text, is_error = shape_answer(answers[-1] if answers else ""), False
        text = self.redactor.redact(text)
        sha = self.store.put_artifact(text.encode("utf-8"), run_id=inp.run_id)
        self.audit(
            inp.run_id,
            ToolRan(
                tool="task", call_id=inp.call.call_id, is_error=is_error, artifact_sha256=sha,
                output_bytes=len(text.encode()), summary=f"subagent {inp.child_run_id}: {text.splitlines()[0][:160]}",
            ),
        )
        return ChildCollected(
            result=ToolResultRef(call_id=inp.call.call_id, tool="task", is_error=is_error, artifact_sha256=sha),
            usage=usage,
        )
