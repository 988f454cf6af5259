"""Telling people what a run needs: notifications to its webhooks, which the run never waits for.

On `approval_requested`, `approval_decided`, `ask_human` and `run_finished` the run starts one
`notify` activity per webhook it names (`LoadRunResult.webhooks`) and goes on at once: the
delivery runs as a task of its own, retried by Temporal under `options.NOTIFY`, and a delivery
that fails is audited (`notification_failed`) and is nothing more to the run. The activity input
is ids only (`NotifyInput`): which webhook, which event, which approval; the URL and secret stay
on the worker, the body is built from Postgres.

Where a delivery may still be in flight:
- at continue-as-new, the run lets deliveries finish for up to `options.NOTIFY_HANDOVER`, then
  hands the unfinished ones to the next run of the workflow (`RunCursor.notifications`), which
  starts them again: same delivery id, attempts counted from 1 (a receiver deduplicates on
  `X-Longrun-Delivery`);
- at the end of the run, after `run_finished` is recorded and its notification started, the
  workflow waits for every delivery to end (bounded by `options.NOTIFY_DRAIN`, longer than a
  delivery's own schedule-to-close), so the last event is tried in full and no activity is left
  dangling.

A run with no webhooks schedules nothing and calls no `patched`: its history is what it was before
notifications existed. Everything here is behind `NOTIFICATIONS_PATCH`.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from datetime import timedelta
from typing import ClassVar

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from longrun.activities.contract import Activities
    from longrun.models.audit import NotificationFailed, NotifyEvent
    from longrun.models.io import NotifyInput
    from longrun.workflows import options as opt
    from longrun.workflows.base import RunBase

NOTIFICATIONS_PATCH = "notifications"


@dataclass
class Outbox:
    """The deliveries this run of the workflow started and has not seen end."""

    in_flight: dict[str, NotifyInput] = field(default_factory=dict)
    """Whose activity has not ended, by delivery id and webhook, in the order they started."""
    tasks: set[asyncio.Task[None]] = field(default_factory=set)
    """Every delivery's task, until its outcome is audited."""


class NotificationsMixin(RunBase):
    outbox: Outbox
    notify_options: ClassVar[opt.ActivityOptions] = opt.NOTIFY
    """The delivery's timeouts and retry policy (a test's workflow subclass retries faster)."""
    notify_handover: ClassVar[timedelta] = opt.NOTIFY_HANDOVER
    """How long continue-as-new waits for deliveries in flight before handing them over."""

    def _notify(self, event: NotifyEvent, *, approval_id: str | None = None) -> None:
        """Start telling every webhook of the run about `event`; returns at once."""
        webhooks = self.spec.webhooks if self.spec else []
        if not webhooks or not self._patched(NOTIFICATIONS_PATCH):
            return
        delivery_id = str(workflow.uuid4())
        for name in webhooks:
            self._deliver(
                NotifyInput(run_id=self.run_id, webhook=name, event=event, delivery_id=delivery_id, approval_id=approval_id)
            )

    def _deliver(self, inp: NotifyInput) -> None:
        key = f"{inp.delivery_id}/{inp.webhook}"
        self.outbox.in_flight[key] = inp
        task = asyncio.create_task(self._delivery(key, inp))
        self.outbox.tasks.add(task)
        task.add_done_callback(self.outbox.tasks.discard)

    async def _delivery(self, key: str, inp: NotifyInput) -> None:
        try:
            await self._act(Activities.notify, inp, self.notify_options)
        except ActivityError as err:
            self.outbox.in_flight.pop(key, None)
            await self._record_undelivered(inp, err)
        else:
            self.outbox.in_flight.pop(key, None)

    async def _record_undelivered(self, inp: NotifyInput, err: ActivityError) -> None:
        """Audit a delivery given up on: the activity's own message (which names no URL) and why
        Temporal stopped retrying (a refusal, the last attempt, a timeout)."""
        cause = err.cause
        attempts: int | None = None
        if isinstance(cause, ApplicationError):
            reason = cause.message
            if cause.details and isinstance(cause.details[0], int):
                attempts = cause.details[0]
        else:
            reason = str(cause or err)
        if err.retry_state is not None:
            reason += f" (gave up: {err.retry_state.name.lower().replace('_', ' ')})"
        failed = NotificationFailed(
            webhook=inp.webhook, event=inp.event, delivery_id=inp.delivery_id, reason=reason[:2000], attempts=attempts
        )
        try:
            await self._record(failed)
        except ActivityError:
            workflow.logger.warning("could not audit the failed delivery %s to webhook %s", inp.delivery_id, inp.webhook)

    def _resume_notifications(self) -> None:
        """Start again the deliveries the previous run of the workflow handed over."""
        carried, self.cursor.notifications = self.cursor.notifications, []
        if carried and self._patched(NOTIFICATIONS_PATCH):
            for inp in carried:
                self._deliver(inp)

    async def _hand_over_notifications(self) -> None:
        """Before continue-as-new: let deliveries in flight end, for a short while; the cursor
        carries the rest to the next run of the workflow."""
        if not self.outbox.tasks:
            return
        with contextlib.suppress(TimeoutError):
            await workflow.wait_condition(lambda: not self.outbox.tasks, timeout=self.notify_handover)
        self.cursor.notifications = list(self.outbox.in_flight.values())

    async def _notify_finished(self) -> None:
        """The `run_finished` notification, then the end of every delivery (bounded), so the
        workflow does not complete while one is still being tried."""
        self._notify("run_finished")
        if not self.outbox.tasks:
            return
        try:
            await workflow.wait_condition(lambda: not self.outbox.tasks, timeout=opt.NOTIFY_DRAIN)
        except TimeoutError:
            workflow.logger.warning(
                "run %s completes with %d notification(s) still being delivered", self.run_id, len(self.outbox.tasks)
            )
