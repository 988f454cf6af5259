"""What an operator does to a running run: pause, resume, cancel, say, compact now, and the
`status` query. Each is a validated update; a finished run refuses them all and writes nothing.

`say` queues only the id of an instruction the client stored in Postgres first: the human's text
never enters workflow history.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from longrun.models.audit import RunControl
    from longrun.models.io import SayInput, StatusQueryResult
    from longrun.models.run import RunStatus
    from longrun.workflows.base import RunBase


class ControlsMixin(RunBase):
    @workflow.query
    def status_query(self) -> StatusQueryResult:
        return StatusQueryResult(
            run_id=self.run_id,
            model=self.spec.model if self.spec else "",
            status=(RunStatus.running if self.request_unaudited and self.status is RunStatus.waiting_approval
                    else self.status).value,
            state=self.state,
            turn=self.cursor.turn,
            pending_approval=None if self.request_unaudited else self.pending,
            usage=self.cursor.usage,
            model_calls=self.cursor.model_calls,
            tool_calls=self.cursor.tool_calls,
            last_compaction=self.cursor.last_compaction,
            reason=self.reason,
            children=list(self.children),
        )

    def _refuse_if_finished(self, what: str) -> None:
        if self.status.finished:
            raise ApplicationError(f"cannot {what}: run {self.run_id} is {self.status.value}")

    @workflow.update(name="pause")
    async def pause(self) -> str:
        self.status = RunStatus.paused
        await self._record(RunControl(action="pause"))
        return "paused: the run stops at the next turn boundary"

    @pause.validator
    def _validate_pause(self) -> None:
        self._refuse_if_finished("pause")

    @workflow.update(name="resume")
    async def resume(self) -> str:
        if self.status is RunStatus.paused and self.state.next_action != "ask_human":
            self.status = RunStatus.running
        await self._record(RunControl(action="resume"))
        return "resumed" if self.status is not RunStatus.paused else "the run waits for a human instruction: use `longrun say`"

    @resume.validator
    def _validate_resume(self) -> None:
        self._refuse_if_finished("resume")

    @workflow.update(name="cancel")
    async def cancel(self) -> str:
        self.cancel_requested = True
        await self._record(RunControl(action="cancel"))
        return "cancelling: the run stops at the next safe point"

    @cancel.validator
    def _validate_cancel(self) -> None:
        self._refuse_if_finished("cancel")

    @workflow.update(name="say")
    async def say(self, inp: SayInput) -> str:
        self.cursor.pending_says.append(inp)
        if self.status is RunStatus.paused and self.state.next_action == "ask_human":
            self.status = RunStatus.running
        if inp.constraint and self.pending is not None and self.decision is None:
            self.voided = "a new constraint arrived while it waited"
        return "instruction queued for the next turn" + (" as a constraint" if inp.constraint else "")

    @say.validator
    def _validate_say(self, inp: SayInput) -> None:
        self._refuse_if_finished("say anything")
        if inp.instruction_id is None or inp.text is not None:
            raise ApplicationError(
                "an instruction is stored in Postgres first and sent by id (instruction_id, no text): "
                "use `longrun say` or `longrun.Client.say`"
            )

    @workflow.update(name="compact_now")
    async def compact_now(self) -> str:
        self.compact_requested = True
        return "compaction requested for the end of this turn"

    @compact_now.validator
    def _validate_compact(self) -> None:
        self._refuse_if_finished("compact")
