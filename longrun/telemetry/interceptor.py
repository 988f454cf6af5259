"""Temporal's tracing interceptor, with the two costs per activity that bought nothing taken out.

`temporalio.contrib.opentelemetry.TracingInterceptor` carries the trace context client ->
workflow -> activities. For every activity a workflow schedules it makes a `StartActivity:...`
span inside the sandbox: a call out of the sandbox to the host (an "extern function") that starts
and ends a span of no duration, then the span's context encoded into the activity's header. On
the worker, every activity decodes that header again (JSON, then the W3C propagators). Profiled
on the overhead benchmark (bench/overhead.py), those were about a quarter of what tracing added
to a turn, and the `StartActivity` span sits between the run's spans and the `RunActivity` span
with nothing of its own in between (it is made and ended in the same instant, when the activity
is scheduled; how long an activity waited to start is in the Temporal SDK's metrics,
`temporal_activity_schedule_to_start_latency`).

So here:
- a workflow schedules each activity with the context the workflow was started with (the
  client's `StartWorkflow` span, the header of the workflow itself): no span, no call out of the
  sandbox, the same header every time. It is also the same after a replay, so an activity retried
  on another worker after a kill -9 still joins the run's trace. Every other workflow span of
  Temporal's (`RunWorkflow`, `CompleteWorkflow`, signals, updates, queries, child workflows) is
  made as before;
- a worker reads a header it has read before from a bounded memo (a run's activities all carry
  the same one now); a `Context` is immutable, so sharing it is safe.

A workflow started by a client that does not trace has no header, so its activities get none and
each starts a trace of its own, as with Temporal's interceptor.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import temporalio.workflow
from opentelemetry.context.context import Context
from temporalio.api.common.v1 import Payload
from temporalio.contrib.opentelemetry import TracingInterceptor, TracingWorkflowInboundInterceptor
from temporalio.contrib.opentelemetry._interceptor import _TracingWorkflowOutboundInterceptor
from temporalio.worker import (
    StartActivityInput,
    StartLocalActivityInput,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
    WorkflowOutboundInterceptor,
)

MAX_CONTEXTS = 4_096
"""Headers a worker remembers the context of (one per run it serves; cleared whole when full)."""


class RunTracingInterceptor(TracingInterceptor):
    """`TracingInterceptor` whose workflows schedule activities under the workflow's own context,
    without a `StartActivity` span, and whose activities remember the contexts they decoded."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._contexts: dict[tuple[str, bytes], Context | None] = {}
        self._contexts_lock = threading.Lock()

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[TracingWorkflowInboundInterceptor]:
        super().workflow_interceptor_class(input)  # registers the extern function the workflow spans use
        return RunWorkflowInboundInterceptor

    def _context_from_headers(self, headers: Mapping[str, Payload]) -> Context | None:
        payload = headers.get(self.header_key)
        if not payload:
            return None
        key = (payload.metadata.get("encoding", b"").decode(errors="replace"), payload.data)
        with self._contexts_lock:
            if key in self._contexts:
                return self._contexts[key]
        context = super()._context_from_headers(headers)
        with self._contexts_lock:
            if len(self._contexts) >= MAX_CONTEXTS:
                self._contexts.clear()
            self._contexts[key] = context
        return context


class RunWorkflowInboundInterceptor(TracingWorkflowInboundInterceptor):
    """Temporal's workflow interceptor, with `_ActivityUnderWorkflow` on the way out."""

    def init(self, outbound: WorkflowOutboundInterceptor) -> None:
        WorkflowInboundInterceptor.init(self, _ActivityUnderWorkflow(outbound, self))

    def activity_header(self) -> Payload | None:
        """The workflow's own trace header (None: started by a client that does not trace)."""
        return temporalio.workflow.info().headers.get(self.header_key) or None


class _ActivityUnderWorkflow(_TracingWorkflowOutboundInterceptor):
    """Activities get the workflow's header as it came; the rest is Temporal's interceptor."""

    root: RunWorkflowInboundInterceptor

    def start_activity(self, input: StartActivityInput) -> temporalio.workflow.ActivityHandle[Any]:
        self._add_header(input)
        return self.next.start_activity(input)

    def start_local_activity(self, input: StartLocalActivityInput) -> temporalio.workflow.ActivityHandle[Any]:
        self._add_header(input)
        return self.next.start_local_activity(input)

    def _add_header(self, input: StartActivityInput | StartLocalActivityInput) -> None:
        header = self.root.activity_header()
        if header is not None:
            input.headers = {**input.headers, self.root.header_key: header}


__all__ = ["MAX_CONTEXTS", "RunTracingInterceptor", "RunWorkflowInboundInterceptor"]
