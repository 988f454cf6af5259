"""Model call and compaction activities."""

from __future__ import annotations

import time

from temporalio import activity

from longrun.activities.base import ActivityBase
from longrun.activities.errors import to_application_error
from longrun.activities.names import COMPACT, MODEL_CALL
from longrun.activities.prompts import SYSTEM_PROMPT
from longrun.context import Calibration, compact, estimate_message, estimate_request, fit_request, render_request
from longrun.context.summarize import ExtractiveSummarizer
from longrun.errors import ContextOverflow, ProviderError, StaleStateError
from longrun.models.audit import CompactionDone, ErrorRecorded, ModelCalled
from longrun.models.blocks import Message, TextBlock
from longrun.models.context import TranscriptItem
from longrun.models.io import CompactInput, CompactResult, ModelCallInput, ModelCallResult, ToolCallRef



class ModelActivities(ActivityBase):
    """The model call and the compaction hook."""

    @activity.defn(name=MODEL_CALL)
    def model_call(self, inp: ModelCallInput) -> ModelCallResult:
        """Render the request from Postgres, call the provider, append the assistant message.

        Idempotent per turn: if this turn's assistant message is already in the transcript (a
        retry after a crash), it is returned without calling the model again."""
        run_id = inp.run_id
        last = self.store.last_transcript_entry(run_id)
        if last is not None and last.role == "assistant" and last.turn == inp.turn:
            return self._result(last, replayed=True, estimated=last.token_estimate, calibrated=0)

        request, calibration, projection, _entries, provider = self.build_request(run_id, inp.overflow_retry)
        estimated = estimate_request(request)
        calibrated = calibration.apply(estimated)
        try:
            with self.heartbeating():
                response = provider.complete(request)
            if response.stop_reason == "model_context_window_exceeded":
                raise ContextOverflow("the model stopped: model_context_window_exceeded")
        except ProviderError as exc:
            self.store.append_audit(run_id, ErrorRecorded(where="model_call", message=self.redactor.redact(str(exc))))
            raise to_application_error(exc) from exc

        self.store.set_calibration(run_id, calibration.update(estimated, response.usage.total_input).model_dump())
        content = list(response.content) or [TextBlock(text="(the model returned no content)")]
        message = Message(role="assistant", content=content)
        seq = self.store.append_transcript(
            run_id, message, token_estimate=estimate_message(message), usage=response.usage, turn=inp.turn
        )
        self.store.append_audit(
            run_id,
            ModelCalled(
                turn=inp.turn,
                model=provider.name,
                transcript_seq=seq,
                usage=response.usage,
                estimated_tokens=estimated,
                calibrated_tokens=calibrated,
                stop_reason=response.stop_reason,
                projection_version=projection.version if projection else None,
            ),
        )
        entry = self.store.transcript(run_id, after_seq=seq - 1, through_seq=seq)[0]
        return self._result(entry, replayed=False, estimated=estimated, calibrated=calibrated)

    @staticmethod
    def _result(entry, *, replayed: bool, estimated: int, calibrated: int) -> ModelCallResult:
        uses = entry.message.tool_uses()
        from longrun.models.provider import Usage

        return ModelCallResult(
            assistant_seq=entry.seq,
            tool_calls=[ToolCallRef(call_id=u.id, name=u.name, index=i, seq=entry.seq) for i, u in enumerate(uses)],
            stop_reason="tool_use" if uses else "end_turn",
            usage=entry.usage or Usage(),
            estimated_tokens=estimated,
            calibrated_tokens=calibrated,
            replayed=replayed,
        )

    def summarizer_for(self, model: str):
        if model == "scripted":
            return ExtractiveSummarizer()
        from longrun.providers import ModelSummarizer

        return ModelSummarizer(self.deps.provider_for(model))

    @activity.defn(name=COMPACT)
    def compact(self, inp: CompactInput) -> CompactResult:
        """Compaction, after the turn's state commit. Discarded as stale if the head moved."""
        run_id = inp.run_id
        started = time.perf_counter()
        spec = self.spec(run_id)
        state = self.store.load_state(run_id)
        if state.state_version != inp.base_state_version:
            return self._stale(run_id, inp, started, None)
        provider = self.deps.provider_for(spec.model)
        previous = self.store.latest_projection(run_id)
        items = self.items(self.store.transcript(run_id))
        with self.heartbeating():
            projection = compact(
                items,
                previous=previous,
                state=state,
                policy=spec.context,
                window=provider.info.window,
                trigger=inp.trigger,
                calibration=self.calibration(run_id),
                summarizer=self.summarizer_for(spec.model),
                system=SYSTEM_PROMPT,
                tools=self.registry.specs(),
                force=inp.trigger in ("overflow", "operator"),
            )
        report = projection.report
        if report.outcome == "noop":
            return CompactResult(outcome="noop", projection_version=None, report=report)
        try:
            version = self.store.save_projection(run_id, projection, expected_state_version=inp.base_state_version)
        except StaleStateError:
            return self._stale(run_id, inp, started, report)
        self.store.append_audit(run_id, CompactionDone(projection_version=version, report=report))
        return CompactResult(outcome=report.outcome, projection_version=version, report=report)

    def _stale(self, run_id: str, inp: CompactInput, started: float, report) -> CompactResult:
        from longrun.models.context import CompactionReport

        report = (report or CompactionReport(trigger=inp.trigger, base_state_version=inp.base_state_version)).model_copy(
            update={"outcome": "stale", "duration_ms": (time.perf_counter() - started) * 1000}
        )
        self.store.append_audit(run_id, CompactionDone(projection_version=None, report=report))
        return CompactResult(outcome="stale", projection_version=None, report=report)
