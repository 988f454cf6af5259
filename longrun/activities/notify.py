"""The notification activity: one attempt to deliver one event of a run to one webhook, audited.

The input names the webhook and the event by ids (`NotifyInput`); the URL and the secret come
from this worker's environment (`longrun.webhooks.config`), the body from Postgres
(`longrun.webhooks.messages`). Each attempt appends a `notification_attempt` event (HTTP status or
error, the webhook's name and scheme://host, never its URL) and a delivered one a
`notification_delivered`; a failure is raised as an `ApplicationError`, by its kind:

    WebhookRefused      a 3xx or 4xx other than 408/429, or the webhook is not configured on
                        this worker: non-retryable
    WebhookUnavailable  408, 429, 5xx, no answer: retried by the call's policy
                        (`options.NOTIFY`), after the receiver's Retry-After when it gave one

The workflow audits the end of a delivery that failed (`notification_failed`), whatever ended it:
a refusal, the last attempt, a timeout. Errors carry no chained cause (`from None`): what Temporal
stores and the worker logs is the message here, which names no URL.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from temporalio import activity
from temporalio.exceptions import ApplicationError

from longrun.activities.base import ActivityBase
from longrun.activities.contract import Activities, implements
from longrun.errors import ConfigError
from longrun.models.audit import (
    ApprovalGranted,
    ApprovalRejected,
    ApprovalRequested,
    BudgetRequested,
    BudgetWarning,
    NotificationAttempt,
    NotificationDelivered,
)
from longrun.models.io import NotifyInput, NotifyResult
from longrun.store import AuditRecord, InvalidInputError
from longrun.webhooks import messages, transport
from longrun.webhooks.config import Webhook
from longrun.webhooks.signing import SIGNATURE_HEADER, sign

Outcome = Literal["delivered", "transient", "permanent"]
WEBHOOK_REFUSED = "WebhookRefused"
WEBHOOK_UNAVAILABLE = "WebhookUnavailable"
USER_AGENT = "longrun-webhooks/1"
ASK_PREFIX = "waiting for a human: "
"""How the `ask_human` activity words the note it leaves (`longrun.activities.run`)."""


class NotifyActivities(ActivityBase):
    @implements(Activities.notify)
    def notify(self, inp: NotifyInput) -> NotifyResult:
        """See the module docstring."""
        attempt = activity.info().attempt if activity.in_activity() else 1
        try:
            hook = self.deps.webhooks.get(inp.webhook)
        except ConfigError as exc:
            self._attempted(inp, attempt, "", "permanent", error=str(exc))
            raise ApplicationError(str(exc), attempt, type=WEBHOOK_REFUSED, non_retryable=True) from None
        body = messages.encode(self.redactor.redact_json(self.compose(inp).to_json()))
        answer = transport.post(hook.url, body, self._headers(inp, hook, body), secret=hook.secret)
        outcome: Outcome = "delivered" if answer.delivered else "permanent" if answer.permanent else "transient"
        self._attempted(inp, attempt, hook.target, outcome, answer=answer)
        if answer.delivered and answer.status is not None:
            self.audit(inp.run_id, NotificationDelivered(
                webhook=inp.webhook, event=inp.event, delivery_id=inp.delivery_id, attempts=attempt,
                status=answer.status, target=hook.target,
            ))
            return NotifyResult(status=answer.status, attempts=attempt)
        what = f"answered {answer.describe()}" if answer.status is not None else f"did not answer ({answer.describe()})"
        message = f"webhook {inp.webhook} ({hook.target}) {what}"
        if answer.permanent:
            raise ApplicationError(message + "; not retried", attempt, type=WEBHOOK_REFUSED, non_retryable=True)
        delay = timedelta(seconds=answer.retry_after) if answer.retry_after is not None else None
        raise ApplicationError(message, attempt, type=WEBHOOK_UNAVAILABLE, next_retry_delay=delay)

    def compose(self, inp: NotifyInput) -> messages.NotificationBody:
        """The notification's body, from the run's row, its audit and its state in Postgres.

        Raises:
            InvalidInputError: a decision the audit does not hold (nothing to tell).
        """
        record = self.store.get_run(inp.run_id)
        spec = record.spec
        common: dict[str, Any] = {"run_id": inp.run_id, "delivery_id": inp.delivery_id, "objective": spec.objective}
        now = datetime.now(UTC)
        if inp.event == "approval_requested":
            asked = self._find(inp.run_id, ApprovalRequested, inp.approval_id)
            request = asked.event if asked is not None and isinstance(asked.event, ApprovalRequested) else None
            return messages.approval_requested(
                **common, at=asked.created_at if asked else now, approval_id=inp.approval_id or "(unknown)",
                tool=request.tool if request else "(unknown)", arguments=request.arguments if request else {},
                expires_at=asked.created_at + timedelta(seconds=spec.approval_ttl_seconds) if asked else None,
                approvers=list(spec.approvers),
            )
        if inp.event == "approval_decided":
            decided = self._find(inp.run_id, (ApprovalGranted, ApprovalRejected), inp.approval_id)
            if decided is None or not isinstance(decided.event, (ApprovalGranted, ApprovalRejected)):
                raise InvalidInputError(f"run {inp.run_id} has no recorded decision on approval {inp.approval_id}")
            asked = self._find(inp.run_id, ApprovalRequested, inp.approval_id)
            e = decided.event
            return messages.approval_decided(
                **common, at=decided.created_at, approval_id=e.approval_id,
                tool=asked.event.tool if asked is not None and isinstance(asked.event, ApprovalRequested) else None,
                verdict="granted" if isinstance(e, ApprovalGranted) else "rejected", approver=e.approver,
                reason=e.reason if isinstance(e, ApprovalRejected) else None,
            )
        if inp.event in ("budget_requested", "budget_warning"):
            kind = BudgetRequested if inp.event == "budget_requested" else BudgetWarning
            found = next((r for r in reversed(self.store.audit(inp.run_id)) if isinstance(r.event, kind)), None)
            if found is None or not isinstance(found.event, BudgetRequested | BudgetWarning):
                raise InvalidInputError(f"run {inp.run_id} has recorded no {inp.event}")
            return messages.budget(event=inp.event, **common, at=found.created_at, request_id=inp.approval_id,
                                   spent_usd=found.event.spent_usd, limit_usd=found.event.limit_usd,
                                   approvers=list(spec.approvers))
        if inp.event == "ask_human":
            notes = self.store.load_state(inp.run_id).notes
            last = notes[-1] if notes else ""
            reason = last[len(ASK_PREFIX):] if last.startswith(ASK_PREFIX) else "the agent asked for a human"
            return messages.ask_human(**common, at=now, reason=reason)
        return messages.run_finished(**common, at=now, status=record.status, reason=record.reason)

    def _find(self, run_id: str, kinds: type | tuple[type, ...], approval_id: str | None) -> AuditRecord | None:
        """The newest audit record of one of `kinds` about `approval_id`."""
        for rec in reversed(self.store.audit(run_id)):
            if isinstance(rec.event, kinds) and getattr(rec.event, "approval_id", None) == approval_id:
                return rec
        return None

    @staticmethod
    def _headers(inp: NotifyInput, hook: Webhook, body: bytes) -> dict[str, str]:
        headers = {
            "Content-Type": "application/json; charset=utf-8",
            "User-Agent": USER_AGENT,
            "X-Longrun-Event": inp.event,
            "X-Longrun-Delivery": inp.delivery_id,
        }
        if hook.secret:
            headers[SIGNATURE_HEADER] = sign(body, hook.secret, int(time.time()))
        return headers

    def _attempted(
        self, inp: NotifyInput, attempt: int, target: str, outcome: Outcome,
        answer: transport.Answer | None = None, error: str | None = None,
    ) -> None:
        self.audit(inp.run_id, NotificationAttempt(
            webhook=inp.webhook, event=inp.event, delivery_id=inp.delivery_id, attempt=attempt, target=target,
            outcome=outcome, status=answer.status if answer else None, error=answer.error if answer else error,
            retry_after=answer.retry_after if answer else None,
        ))
