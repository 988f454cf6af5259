"""Run-level activities: loading the run, audit events, approvals, turn commit, steering,
asking a human, finishing."""

from __future__ import annotations

from typing import Any

from longrun.activities.base import ActivityBase, brief
from longrun.activities.contract import Activities, implements
from longrun.activities.provider_context import effective_policy
from longrun.auth.scope_ending import end_scopes
from longrun.context import estimate_message, estimate_request, should_compact
from longrun.errors import ConfigError, ContextOverflow
from longrun.mcp.registry import listing_sha256
from longrun.models.audit import AuditEvent, InstructionDropped, RunFinished, ScopeEnded, Steered
from longrun.models.blocks import Message, ToolResultBlock
from longrun.models.io import (
    AskHumanInput,
    CommitTurnInput,
    CommitTurnResult,
    FinishInput,
    LoadRunResult,
    RecordEventInput,
    RunRef,
    StateBrief,
    SteerInput,
    SteerResult,
)
from longrun.models.state import NextAction, TaskState
from longrun.store import InvalidInputError

MAX_RESULT_CHARS_IN_TRANSCRIPT = 400_000
"""A tool result longer than this is cut in the transcript (head and tail kept); the whole text
stays in the artifact store under the reference the result names."""


def _clip(text: str, sha: str | None) -> str:
    if len(text) <= MAX_RESULT_CHARS_IN_TRANSCRIPT:
        return text
    half = MAX_RESULT_CHARS_IN_TRANSCRIPT // 2
    return (
        text[:half]
        + f"\n[... {len(text) - 2 * half} characters omitted; read_artifact sha256={sha} has the whole output ...]\n"
        + text[-half:]
    )


class RunActivities(ActivityBase):
    @implements(Activities.load_run)
    def load_run(self, inp: RunRef) -> LoadRunResult:
        record = self.store.get_run(inp.run_id)
        spec = record.spec
        refusal = self.deps.trust.refusal(spec)
        if refusal is not None:  # before anything runs: the workflow fails the run with this reason
            raise ConfigError(f"this worker does not run this run: {refusal}")
        self.remember_spec(inp.run_id, spec)
        return LoadRunResult(
            approvers=list(spec.approvers),
            caps=spec.caps,
            continue_as_new_every=spec.continue_as_new_every,
            approval_ttl_seconds=spec.approval_ttl_seconds,
            model=spec.model,
            subagent_width=spec.subagent_width,
            state=brief(self.head(inp.run_id)),
            status=record.status,
            webhooks=self.deps.webhooks.for_run(spec.webhooks, subagent=record.parent_run_id is not None),
            mcp_listing_needed=bool(spec.mcp_servers) and listing_sha256(self.head(inp.run_id)) is None,
        )

    @implements(Activities.record_event)
    def record_event(self, inp: RecordEventInput) -> None:
        self.audit(inp.run_id, inp.event, actor=inp.actor)

    @implements(Activities.commit_turn)
    def commit_turn(self, inp: CommitTurnInput) -> CommitTurnResult:
        """Append the turn's tool results as one user message (full text by artifact reference),
        then decide whether the compaction hook fires. Idempotent per turn."""
        run_id = inp.run_id
        seq = None
        results_tokens: int | None = None
        last = self.last_entry(run_id)
        already = last is not None and last.role == "user" and last.turn == inp.turn and last.seq > inp.assistant_seq
        if inp.results and not already:
            blocks = []
            for ref in inp.results:
                if ref.artifact_sha256:
                    text = self.artifact(ref.artifact_sha256).decode("utf-8", errors="replace")
                else:
                    text = ref.error_text or ""
                block = ToolResultBlock(tool_use_id=ref.call_id, content=_clip(text, ref.artifact_sha256), is_error=ref.is_error)
                extra = {"longrun_tool": ref.tool}
                if ref.artifact_sha256:
                    extra["longrun_artifact"] = ref.artifact_sha256
                blocks.append(ToolResultBlock.model_validate({**block.model_dump(), **extra}))
            message = Message(role="user", content=blocks)
            results_tokens = estimate_message(message)
            seq = self.append_transcript(run_id, message, token_estimate=results_tokens, turn=inp.turn)
        elif already and last is not None:
            seq = last.seq
        state = self.head(run_id)
        spec = self.spec(run_id)
        provider = self.deps.provider_for(spec.provider_key())
        try:
            if inp.sent_tokens_estimated is not None:
                # what the model was just sent, plus what this turn added: no second render per turn
                if inp.assistant_tokens is not None and (results_tokens is not None or not inp.results):
                    added = inp.assistant_tokens + (results_tokens or 0)
                else:
                    added = sum(e.token_estimate for e in self.store.transcript(run_id, after_seq=inp.assistant_seq - 1))
                calibrated = self.calibration(run_id).apply(inp.sent_tokens_estimated + added)
            else:
                request, calibration, _p, _e, provider = self.build_request(run_id)
                calibrated = calibration.apply(estimate_request(request))
        except ContextOverflow:
            # even hard enforcement cannot fit the next request: compaction is the only way on
            calibrated = spec.context.limit(provider.info.window) + 1
        trigger = should_compact(
            calibrated,
            policy=effective_policy(spec.context, spec.model),  # provider mode: only the hard limit
            window=provider.info.window,
            last_compaction_turn=inp.last_compaction_turn,
            turn=inp.turn,
            stage_boundary=inp.stage_boundary,
        )
        return CommitTurnResult(transcript_seq=seq, state=brief(state), request_tokens_calibrated=calibrated, compaction_trigger=trigger)

    @implements(Activities.steer)
    def steer(self, inp: SteerInput) -> SteerResult:
        """A new user instruction: appended to the transcript; a constraint is also kept verbatim
        in TaskState.constraints; a run waiting for a human goes back to inspecting. The text is
        read from the run's instruction inbox by id (the workflow never holds it); re-applied on
        the head (a human's word does not depend on the version it lands on)."""
        run_id = inp.run_id
        if inp.instruction_id is not None:
            text = self.store.get_instruction(run_id, inp.instruction_id).text
        elif inp.text is not None:
            text = inp.text  # a history recorded before instructions were stored first
        else:
            raise InvalidInputError("an instruction needs an instruction_id")
        message = Message.user_text(("New constraint from the user: " if inp.constraint else "") + text)
        seq = self.append_transcript(run_id, message, token_estimate=estimate_message(message), turn=inp.turn)

        def mutate(state: TaskState) -> TaskState:
            update: dict[str, Any] = {}
            if inp.constraint and text not in state.constraints:
                update["constraints"] = [*state.constraints, text]
            if state.next_action is NextAction.ask_human:
                update["next_action"] = NextAction.inspect
            changed = state.model_copy(update=update)
            # a new constraint ends every standing approval: it was granted under the old ones
            return end_scopes(changed, "a constraint was added") if inp.constraint else changed

        head = self.head(run_id)
        state = head
        if mutate(head) != head:
            state = self.reapply_on_head(run_id, mutate, "human", "instruction via say")
        self.audit(
            run_id, Steered(text=self.redactor.redact(text), as_constraint=inp.constraint, transcript_seq=seq), actor="human"
        )
        if inp.constraint:
            for scope in head.scopes:
                if not scope.ended:
                    self.audit(run_id, ScopeEnded(scope_id=scope.id, by="human", reason="a constraint was added"),
                               actor="human")
        return SteerResult(transcript_seq=seq, state=brief(state))

    @implements(Activities.ask_human)
    def ask_human(self, inp: AskHumanInput) -> StateBrief:
        def mutate(state: TaskState) -> TaskState:
            return state.model_copy(
                update={"next_action": NextAction.ask_human, "notes": [*state.notes, f"waiting for a human: {inp.reason}"]}
            )

        return brief(self.reapply_on_head(inp.run_id, mutate, "workflow", f"ask_human: {inp.reason}"))

    @implements(Activities.finish_run)
    def finish_run(self, inp: FinishInput) -> None:
        record = self.store.get_run(inp.run_id)
        if record.status == inp.status:
            return  # a retry after the end landed: the status and its events are written together
        reason = self.redactor.redact(inp.reason)
        events: list[AuditEvent] = []
        for instruction_id in inp.dropped_instructions:
            said = self.store.get_instruction(inp.run_id, instruction_id)
            events.append(InstructionDropped(
                instruction_id=instruction_id, text=said.text, as_constraint=said.as_constraint,
                reason=f"the run ended ({inp.status}: {reason}) before the turn boundary that would have applied it",
            ))
        events.append(RunFinished(status=inp.status, reason=reason))
        # one statement: the status, the dropped instructions and run_finished land together
        self.store.end_run(inp.run_id, inp.status, inp.reason, events)
        self.audited(events)
