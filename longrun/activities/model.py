"""Model call and compaction activities."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from temporalio import activity

from longrun.activities import provider_context as pc
from longrun.activities.base import ActivityBase
from longrun.activities.contract import Activities, implements
from longrun.activities.prompts import SYSTEM_PROMPT
from longrun.context import compact, estimate_message, estimate_request, render_request
from longrun.context.state_block import notes_budget
from longrun.context.summary import ExtractiveSummarizer, Summarizer
from longrun.errors import ConfigError, ContextOverflow, ProviderError, StaleStateError
from longrun.models.audit import (
    AuditEvent,
    CompactionDone,
    CompactionStarted,
    ErrorRecorded,
    ModelCalled,
    ProviderContextManaged,
)
from longrun.models.blocks import Message, TextBlock
from longrun.models.context import CompactionReport, FactRow, Projection
from longrun.models.io import CompactInput, CompactResult, ModelCallInput, ModelCallResult, ToolCallRef
from longrun.models.provider import ModelRequest, ModelResponse, Usage
from longrun.models.state import TaskState
from longrun.providers.base import Provider
from longrun.store.spend import Settle
from longrun.telemetry import spans
from longrun.telemetry.metrics import request_outcome

if TYPE_CHECKING:
    from opentelemetry.trace import Span

log = logging.getLogger(__name__)

_TOO_LONG = re.compile(r"(\d+)\s*tokens\s*>\s*(\d+)\s*maximum")

MAX_ERROR_CHARS = 2_000
"""A failed compaction's error in the audit: its type and message, not a traceback (that goes to
the worker's log)."""
OVERFLOW_MARGIN = 0.9
"""After an overflow, the retry aims this far below the size the provider would have accepted."""


def retry_ceiling(message: str, sent_tokens: int) -> int | None:
    """The token ceiling the retry after a provider overflow aims at, in our (calibrated) units.

    The API says how long the prompt was and what it accepts ("prompt is too long: 210000 tokens
    > 200000 maximum"); scaling what we sent by that ratio corrects for our estimator's error.
    Without those numbers, aim at 80% of what we sent."""
    if sent_tokens <= 0:
        return None
    found = _TOO_LONG.search(message)
    if found and int(found.group(1)) > 0:
        ratio = int(found.group(2)) / int(found.group(1))
        return max(100, int(sent_tokens * ratio * OVERFLOW_MARGIN))
    return max(100, int(sent_tokens * 0.8))


def provider_ceiling(message: str, sent_tokens: int) -> int | None:
    """The most the provider's own numbers admit after an overflow, in our units: what we sent,
    scaled by its maximum over its count, without `retry_ceiling`'s margin (without the numbers:
    anything smaller than what we sent).

    The margin is an aim, not a wall: when the part of a request that no stage may drop (system
    prompt, tools, summary, task state, the open tool cycle) is over the aim but under this, the
    request goes out at its smallest instead of the run failing. Content the estimator
    under-counts (paths, digits, hashes: dense for every real tokenizer) is what lands there."""
    if sent_tokens <= 0:
        return None
    found = _TOO_LONG.search(message)
    if found and int(found.group(1)) > 0:
        return max(100, int(sent_tokens * int(found.group(2)) / int(found.group(1))))
    return max(100, sent_tokens - 1)


def compaction_reads_after(previous: Projection | None, facts: Sequence[FactRow]) -> int:
    """The transcript entries a compaction reads are those after this seq: one range read, its
    length set by what the next compaction changes, not by the length of the run (issue 26).

    `compact` needs the entries after the previous projection's cover (the new ones), the
    entries its kept messages stand for (their seqs, the last `len(messages)` up to the cover:
    a compaction only ever drops a prefix) and, for the fact store, the entries after the last
    one extracted. Every entry up to the last one the projection summarized was extracted by the
    compaction that summarized it (an entry without facts leaves no row, so `through_seq` can lag
    behind it; reading that stretch again would find nothing new). One entry more is read at the
    start: the tool_use of the first tool result, whose key input the fact extraction quotes.

    A run whose store is empty (a new run, or one from before the fact store) is read whole, as
    before: its entries may never have been extracted."""
    if previous is None or not any(r.source != "note" for r in facts):
        return 0
    summarized = previous.covers_through_seq - len(previous.messages)
    return max(0, summarized - 1)


class ModelActivities(ActivityBase):
    """The model call and the compaction hook."""

    @implements(Activities.model_call)
    def model_call(self, inp: ModelCallInput) -> ModelCallResult:
        """Render the request from Postgres, call the provider, append the assistant message.

        Idempotent per turn: if this turn's assistant message is already in the transcript (a
        retry after a crash), it is returned without calling the model again."""
        run_id = inp.run_id
        last = self.last_entry(run_id)
        if last is not None and last.role == "assistant" and last.turn == inp.turn:
            entry = self.store.transcript(run_id, after_seq=last.seq - 1, through_seq=last.seq)[0]
            if entry.usage is not None:  # a crash came after the answer was saved: settle it once
                self._settle_spend(run_id, inp.turn, entry.seq, entry.usage)
            return self._result(
                entry.seq, entry.message, entry.usage, entry.token_estimate, replayed=True,
                estimated=entry.token_estimate, calibrated=0,
            )

        spec = self.spec(run_id)
        with spans.model_span(run_id, inp.turn, spec.model, self.redactor) as span:
            return self._call_model(inp, span)

    def _call_model(self, inp: ModelCallInput, span: Span | None) -> ModelCallResult:
        """The call itself, inside its inference span (`span`: None while tracing is off)."""
        run_id = inp.run_id
        calibrated = 0
        try:
            request, calibration, projection, _entries, provider = self.build_request(
                run_id, inp.limit_override, inp.limit_hard
            )
            spec = self.spec(run_id)
            request = pc.with_provider_context(request, spec.context, spec.model, provider.info.window)
            estimated = estimate_request(request)
            calibrated = calibration.apply(estimated)
            key = self._sent(run_id, inp, spec.model, calibrated)
            try:
                with self.heartbeating():
                    response = self._complete(provider, request, span)
            except ProviderError:
                self.store.record_request_failed(run_id, **key)
                raise
        except ProviderError as exc:
            self.audit(run_id, ErrorRecorded(where="model_call", message=self.redactor.redact(str(exc))))
            if isinstance(exc, ContextOverflow):
                # ceilings for the retry travel back: below what overflowed, by the provider's own ratio
                raise ContextOverflow(
                    str(exc), aim=retry_ceiling(str(exc), calibrated), most=provider_ceiling(str(exc), calibrated)
                ) from exc
            raise

        updated = pc.calibration_after(calibration, estimated, request, response)
        content = list(response.content) or [TextBlock(text="(the model returned no content)")]
        summary_tokens = None
        if request.context is not None and response.context is not None:
            content, summary_tokens = pc.record(content, response.context, self._summary_beside(run_id, response, request))
        message = Message(role="assistant", content=content)
        spans.record_content(span, request.messages, message, response.stop_reason, self.redactor)
        tokens = estimate_message(message)
        # the answer, what it taught the estimator, its request settled in the ledger and its audit: one statement
        settle = Settle(response.usage, self.deps.prices.cost(self.spec(run_id).model, response.usage))

        def audited(seq: int) -> list[AuditEvent]:
            events: list[AuditEvent] = [ModelCalled(
                turn=inp.turn, model=provider.name, transcript_seq=seq, usage=response.usage,
                estimated_tokens=estimated, calibrated_tokens=calibrated, stop_reason=response.stop_reason,
                projection_version=projection.version if projection else None,
            )]
            if request.context is not None and response.context is not None:
                r = response.context
                events.append(ProviderContextManaged(
                    turn=inp.turn, model=provider.name, mode=request.context.mode, transcript_seq=seq,
                    cleared_tool_uses=r.cleared_tool_uses, cleared_input_tokens=r.cleared_input_tokens,
                    compacted=r.compacted, compaction_readable=r.compaction_readable, summary_tokens=summary_tokens,
                    applied_edits=r.applied_edits,
                ))
            return events

        seq = self.append_transcript(run_id, message, token_estimate=tokens, usage=response.usage, turn=inp.turn,
                                     calibration=updated, settle=settle, audits=audited)
        log.info("model answered: turn %d, %s, %d tokens in, %d out, stop %s", inp.turn, provider.name,
                 response.usage.total_input, response.usage.output_tokens, response.stop_reason)
        return self._result(seq, message, response.usage, tokens, replayed=False, estimated=estimated, calibrated=calibrated)

    def _complete(self, provider: Provider, request: ModelRequest, span: Span | None) -> ModelResponse:
        """The provider's answer to `request`, counted in the worker's metrics by outcome and
        recorded on the inference span (`span`: None while tracing is off).

        Raises:
            ContextOverflow: the provider refused the request as too long, or stopped at its window.
            ProviderError: the provider failed otherwise."""
        metrics = self.deps.metrics
        try:
            response = provider.complete(request)
            spans.record_response(span, response.usage, response.stop_reason, response.model, request.max_tokens,
                                  self.redactor)
            if response.stop_reason == "model_context_window_exceeded":
                raise ContextOverflow("the model stopped: model_context_window_exceeded")
        except Exception as exc:
            if metrics is not None:
                metrics.model_request(provider.name, request_outcome(exc))
            raise
        if metrics is not None:
            metrics.model_request(provider.name, request_outcome(None))
        return response

    def _sent(self, run_id: str, inp: ModelCallInput, model: str, calibrated: int) -> dict[str, int]:
        """The ledger row of this request, written before the provider is called (at the cost of
        its input estimate), and its key: turn, overflow retry, Temporal attempt."""
        key = {"turn": inp.turn, "overflow_retry": inp.overflow_retry,
               "attempt": activity.info().attempt if activity.in_activity() else 1}
        self.store.record_request_sent(run_id, model=model, **key,
                                       estimate_usd=self.deps.prices.cost(model, Usage(input_tokens=calibrated)))
        return key

    def _settle_spend(self, run_id: str, turn: int, seq: int, usage: Usage) -> None:
        """The answer of `turn` (entry `seq`) and its cost, into the ledger: once per turn."""
        self.store.settle_turn(run_id, turn=turn, transcript_seq=seq, usage=usage,
                               cost_usd=self.deps.prices.cost(self.spec(run_id).model, usage))

    def _summary_beside(self, run_id: str, response: ModelResponse, request: ModelRequest) -> str | None:
        """longrun's structured summary for an opaque provider compaction (None otherwise)."""
        report = response.context
        if report is None or not report.compacted or report.compaction_readable:
            return None
        spec = self.spec(run_id)
        provider = self.deps.provider_for(spec.provider_key())
        # the whole transcript: this summary is built without the fact store (its ledger and body
        # come from every entry), and only when the provider compacts opaquely
        return pc.longrun_summary(
            self.items(self.store.transcript(run_id)), previous=self.store.latest_projection(run_id),
            state=self.head(run_id), policy=spec.context, window=provider.info.window,
            calibration=self.calibration(run_id), system=request.system, tools=request.tools,
        )

    @staticmethod
    def _result(
        seq: int, message: Message, usage: Usage | None, tokens: int, *, replayed: bool, estimated: int, calibrated: int
    ) -> ModelCallResult:
        """The call's result from the assistant message it appended (entry `seq`)."""
        uses = message.tool_uses()
        return ModelCallResult(
            assistant_seq=seq,
            tool_calls=[ToolCallRef(call_id=u.id, name=u.name, index=i, seq=seq) for i, u in enumerate(uses)],
            stop_reason="tool_use" if uses else "end_turn",
            usage=usage or Usage(),
            estimated_tokens=estimated,
            calibrated_tokens=calibrated,
            replayed=replayed,
            assistant_tokens=tokens,
        )

    def summarizer_for(self, model: str) -> Summarizer:
        """The summarizer of stage 2 for `model` (the policy's `summary_model`, else the run's):
        the extractive one for `scripted`, else a model summary. When this worker cannot build
        that model's provider (no API key), the summarizer fails with the reason, so the report
        says why and the pipeline falls back to the extractive summary."""
        if model == "scripted":
            return ExtractiveSummarizer()
        from longrun.providers import ModelSummarizer

        try:
            provider = self.deps.provider_for(model)
        except ConfigError as exc:
            return UnavailableSummarizer(f"summary model {model}: {exc}")
        return ModelSummarizer(provider)

    @implements(Activities.compact)
    def compact(self, inp: CompactInput) -> CompactResult:
        """Compaction, after the turn's state commit. Discarded as stale if the head moved.

        Audited twice: `compaction_started` before the pipeline runs (appended at once, so a
        compaction that dies mid-way is still seen), then `compaction` with the outcome. An
        exception inside the pipeline is the outcome `failed`, not a failed activity: nothing is
        written and the run goes on with its previous projection (every request is still fitted
        under the hard limit when it is sent). The store's failures (a database that is down)
        raise, so Temporal retries the activity; once its retries are spent the workflow audits
        the failure and goes on (`AgentRunWorkflow._compact`).

        The run's fact store is read here and passed to `compact` as data; the rows it adds are
        saved with the projection, in one transaction (`Store.save_projection`)."""
        with spans.compaction_span(inp.run_id, inp.turn, inp.trigger) as span:
            result = self._compact(inp)
            spans.record_compaction(span, result.outcome, result.report)
            return result

    def _compact(self, inp: CompactInput) -> CompactResult:
        run_id = inp.run_id
        started = time.perf_counter()
        spec = self.spec(run_id)
        state = self.head(run_id)
        provider = self.deps.provider_for(spec.provider_key())
        window = provider.info.window
        previous = self.store.latest_projection(run_id)
        facts = self.store.facts(run_id)
        items = self.items(self.store.transcript(run_id, after_seq=compaction_reads_after(previous, facts)))
        calibration = self.calibration(run_id)
        tools = self.tools_for(run_id).specs(read_only=spec.read_only)
        policy = spec.context
        if inp.budget is not None:
            policy = policy.model_copy(update={"budget": min(inp.budget, policy.limit(window))})
        cover = previous.covers_through_seq if previous else 0
        as_is = render_request(
            model=spec.model, system=SYSTEM_PROMPT, projection=previous, new_items=[i for i in items if i.seq > cover],
            state=state, tools=tools, max_tokens=min(policy.reserve_output, provider.info.max_output),
            notes_tokens=notes_budget(spec.context.limit(window)),
        )
        before = calibration.apply(estimate_request(as_is))
        self.audit(run_id, CompactionStarted(
            trigger=inp.trigger, turn=inp.turn, base_state_version=inp.base_state_version,
            tokens_before_calibrated=before, budget=inp.budget,
            attempt=activity.info().attempt if activity.in_activity() else 1,
        ))
        self.flush_before_effect()
        if state.state_version != inp.base_state_version:
            return self._stale(run_id, inp, started, None)
        try:
            with self.heartbeating():
                projection = compact(
                    items,
                    previous=previous,
                    state=state,
                    policy=policy,
                    window=window,
                    trigger=inp.trigger,
                    calibration=calibration,
                    summarizer=self.summarizer_for(spec.provider_key(policy.summary_model)),
                    system=SYSTEM_PROMPT,
                    tools=tools,
                    force=inp.trigger in ("overflow", "operator"),
                    facts=facts,
                )
        except Exception as exc:  # a bug in the pipeline must not end the run
            log.exception("compaction of run %s failed inside the pipeline", run_id)
            failed = CompactionReport(
                trigger=inp.trigger, base_state_version=inp.base_state_version, budget=policy.limit(window),
                tokens_before_calibrated=before, tokens_after_calibrated=before, outcome="failed",
                duration_ms=(time.perf_counter() - started) * 1000,
            )
            error = self.redactor.redact(f"{type(exc).__name__}: {exc}")[:MAX_ERROR_CHARS]
            self.audit(run_id, CompactionDone(projection_version=None, report=failed, error=error))
            return CompactResult(outcome="failed", projection_version=None, report=failed)
        report = projection.report
        if report.outcome == "noop":
            self.audit(run_id, CompactionDone(projection_version=None, report=report))
            return CompactResult(outcome="noop", projection_version=None, report=report)
        try:
            version = self.store.save_projection(run_id, projection, expected_state_version=inp.base_state_version)
        except StaleStateError:
            return self._stale(run_id, inp, started, report)
        self.audit(run_id, CompactionDone(projection_version=version, report=report))
        return CompactResult(outcome=report.outcome, projection_version=version, report=report)

    def _stale(self, run_id: str, inp: CompactInput, started: float, report: CompactionReport | None) -> CompactResult:
        report = (report or CompactionReport(trigger=inp.trigger, base_state_version=inp.base_state_version)).model_copy(
            update={"outcome": "stale", "duration_ms": (time.perf_counter() - started) * 1000}
        )
        self.audit(run_id, CompactionDone(projection_version=None, report=report))
        return CompactResult(outcome="stale", projection_version=None, report=report)


class UnavailableSummarizer:
    """Stands in for a model summarizer this worker cannot build: it fails with the reason, which
    the pipeline records (`summary_rejected_reason`) before it uses the extractive summary."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def summarize(self, messages: list[Message], previous_summary: str | None, state: TaskState, max_tokens: int) -> str:
        raise ConfigError(self.reason)
