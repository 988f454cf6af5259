"""The worker's Prometheus metrics: what its activities did, counted where they did it.

Most counters are fed from the audit events an activity appends (`WorkerMetrics.observe`, called
once the batch is in PostgreSQL): a counter then never shows something the audit does not, and a
scrape can be checked against the audit (tests/test_metrics.py does). Two things have no audit
event of their own and are counted in place: every request sent to a model, by outcome
(`model_request`), and every activity's latency (`MetricsInterceptor`).

Labels come from closed sets (outcomes, statuses, gate rules, compaction triggers, activity names)
plus the model, which a run's spec names: at most `MAX_MODELS` distinct models are labelled, the
rest are counted as `other`, so whoever may start runs cannot grow the worker's memory or a
scraper's series without bound. No run id, approval id, tool argument or text is ever a label.

The console's metrics (runs by status, pending approvals) are read from PostgreSQL at scrape time
instead: `longrun.telemetry.overview`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.process_collector import ProcessCollector
from temporalio import activity
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput, Interceptor

from longrun.errors import ContextOverflow, FatalProviderError, RetryableProviderError
from longrun.models.audit import (
    AuditEvent,
    CompactionDone,
    EffectIntent,
    EffectSettled,
    GateVerdict,
    ModelCalled,
    ToolRan,
)
from longrun.models.provider import Usage
from longrun.providers.pricing import estimate_cost

MAX_MODELS = 50
"""Distinct model labels a worker keeps; more are counted under `other`."""

ACTIVITY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
"""Seconds: a state tool takes milliseconds, a model call seconds, a command or a compaction minutes."""

FREED_BY = frozenset({"applied", "summary_rejected"})
"""Compaction outcomes whose projection was saved (the others free nothing)."""


def price(model: str, usage: Usage) -> float | None:
    """Dollars for one request: the one place the metrics ask for a price (None: no price)."""
    return estimate_cost(model, usage)


class _ModelNames:
    """The model label: the model's name while fewer than `MAX_MODELS` were seen, else `other`."""

    def __init__(self) -> None:
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, model: str) -> str:
        with self._lock:
            if model in self._seen:
                return model
            if len(self._seen) < MAX_MODELS:
                self._seen.add(model)
                return model
        return "other"


class WorkerMetrics:
    """One worker's metrics, in a registry of their own (`registry`, served by `longrun worker
    --metrics-port`). Thread-safe: activities run on a thread pool."""

    def __init__(self, registry: CollectorRegistry | None = None, *, process: bool = True) -> None:
        self.registry = registry or CollectorRegistry()
        if process:
            ProcessCollector(registry=self.registry)
        r = self.registry
        self._model = _ModelNames()
        self.turns = Counter("longrun_turns", "Turns whose model answer was recorded, by how the answer ended "
                             "(tool_use, end_turn, max_tokens, other).", ["outcome"], registry=r)
        self.model_requests = Counter("longrun_model_requests", "Requests sent to a model, by outcome (ok, "
                                      "overflow, retryable, fatal, error).", ["model", "outcome"], registry=r)
        self.tool_calls = Counter("longrun_tool_calls", "Tool calls that ran and stored a result, by outcome "
                                  "(ok, error). Calls the gate refused are in longrun_gate_verdicts_total.",
                                  ["outcome"], registry=r)
        self.tokens = Counter("longrun_model_tokens", "Tokens the provider reported, by kind (input, output, "
                              "cache_write, cache_read) and model.", ["model", "kind"], registry=r)
        self.cost = Counter("longrun_model_cost_dollars", "US dollars at list price for the recorded usage, by "
                            "model (models without a price are in longrun_model_unpriced_requests_total).",
                            ["model"], registry=r)
        self.unpriced = Counter("longrun_model_unpriced_requests", "Recorded model answers with no price: never "
                                "counted as free.", ["model"], registry=r)
        self.compactions = Counter("longrun_compactions", "Compactions, by trigger and outcome.",
                                   ["trigger", "outcome"], registry=r)
        self.compaction_freed = Counter("longrun_compaction_freed_tokens", "Tokens (calibrated estimate) that "
                                        "saved compactions took out of the request, by trigger.", ["trigger"],
                                        registry=r)
        self.gate_verdicts = Counter("longrun_gate_verdicts", "The invariant gate's verdicts, by rule and verdict.",
                                     ["rule", "verdict"], registry=r)
        self.effects = Counter("longrun_effects", "Effect ledger transitions: unknown when an intent is first "
                               "recorded, then confirmed or none when it settles.", ["status"], registry=r)
        self.activity_seconds = Histogram("longrun_activity_duration_seconds", "Wall time of each activity "
                                          "attempt on this worker, by activity and outcome (ok, failed).",
                                          ["activity", "outcome"], buckets=ACTIVITY_BUCKETS, registry=r)

    def observe(self, events: Iterable[AuditEvent]) -> None:
        """Count what a batch of audit events, just appended, says happened."""
        for event in events:
            if isinstance(event, ModelCalled):
                self._model_called(event)
            elif isinstance(event, ToolRan):
                self.tool_calls.labels("error" if event.is_error else "ok").inc()
            elif isinstance(event, GateVerdict):
                self.gate_verdicts.labels(event.rule, event.verdict).inc()
            elif isinstance(event, EffectIntent):
                if event.attempt == 1:
                    self.effects.labels("unknown").inc()
            elif isinstance(event, EffectSettled):
                self.effects.labels(event.status).inc()
            elif isinstance(event, CompactionDone):
                report = event.report
                self.compactions.labels(report.trigger, report.outcome).inc()
                if report.outcome in FREED_BY:
                    freed = report.tokens_before_calibrated - report.tokens_after_calibrated
                    self.compaction_freed.labels(report.trigger).inc(max(0, freed))

    def _model_called(self, event: ModelCalled) -> None:
        model, usage = self._model(event.model), event.usage
        stop = event.stop_reason if event.stop_reason in ("tool_use", "end_turn", "max_tokens") else "other"
        self.turns.labels(stop).inc()
        for kind, n in (("input", usage.input_tokens), ("output", usage.output_tokens),
                        ("cache_write", usage.cache_creation_input_tokens), ("cache_read", usage.cache_read_input_tokens)):
            if n:
                self.tokens.labels(model, kind).inc(n)
        dollars = price(event.model, usage)
        if dollars is None:
            self.unpriced.labels(model).inc()
        else:
            self.cost.labels(model).inc(dollars)

    def model_request(self, model: str, outcome: str) -> None:
        """One request sent to a model and how it ended (`request_outcome` names the failures)."""
        self.model_requests.labels(self._model(model), outcome).inc()

    def activity_done(self, name: str, seconds: float, ok: bool) -> None:
        self.activity_seconds.labels(name, "ok" if ok else "failed").observe(seconds)


def request_outcome(exc: BaseException | None) -> str:
    """The `outcome` label of a model request that raised `exc` (None: it answered)."""
    if exc is None:
        return "ok"
    if isinstance(exc, ContextOverflow):
        return "overflow"
    if isinstance(exc, RetryableProviderError):
        return "retryable"
    if isinstance(exc, FatalProviderError):
        return "fatal"
    return "error"


class _TimeActivities(ActivityInboundInterceptor):
    def __init__(self, next: ActivityInboundInterceptor, metrics: WorkerMetrics) -> None:
        super().__init__(next)
        self._metrics = metrics

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        started, ok = time.perf_counter(), False
        try:
            result = await self.next.execute_activity(input)
            ok = True
            return result
        finally:
            self._metrics.activity_done(activity.info().activity_type, time.perf_counter() - started, ok)


class MetricsInterceptor(Interceptor):
    """Times every activity attempt into `longrun_activity_duration_seconds` (register on the worker)."""

    def __init__(self, metrics: WorkerMetrics) -> None:
        self.metrics = metrics

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _TimeActivities(super().intercept_activity(next), self.metrics)


__all__ = ["MAX_MODELS", "MetricsInterceptor", "WorkerMetrics", "price", "request_outcome"]
