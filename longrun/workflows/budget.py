"""A run family that reaches its budget stops for a human instead of ending: the budget request,
its wait, and the signed `raise_budget` update that answers it (a raise, or a rejection that
ends the run cleanly). The 80% warning is here too.

Whether the budget is reached is read from the ledger in PostgreSQL by the turn activity
(`longrun.activities.budget`), never counted in this workflow's memory. The request shows where
an approval does (the pending view, the inbox, `status`), as a `PendingApproval` of kind
`budget`; `longrun approve` refuses it and says to use `longrun raise-budget`. Everything here
runs only for a run started with `--max-cost`, behind `BUDGET_PATCH`.
"""

from __future__ import annotations

import hashlib
from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from longrun.activities.boundary import ErrorType, error_type
    from longrun.activities.contract import Activities
    from longrun.models.audit import BudgetRequested, BudgetWarning
    from longrun.models.io import BudgetCheck, BudgetDecisionInput, BudgetInput
    from longrun.models.run import PendingApproval, RunStatus
    from longrun.models.signed import BudgetRecord
    from longrun.workflows import options as opt
    from longrun.workflows.base import Stop
    from longrun.workflows.interface import REFUSAL_AUDITED
    from longrun.workflows.notifications import NotificationsMixin

BUDGET_PATCH = "budget-wait"
"""Reaching `--max-cost` waits for a signed raise; the 80% warning is audited and sent."""
BUDGET_REQUEST_DISPLAY = timedelta(days=3650)
"""A budget request does not expire: it waits for a human (this is only what `expires_at` shows)."""


class BudgetMixin(NotificationsMixin):
    budget_answer: BudgetInput | None = None
    budget_deciding: bool = False

    async def _budget_stop(self, check: BudgetCheck) -> None:
        """The turn activity found the budget reached (or impossible to hold): wait for a raise,
        or end the run."""
        self._patched(BUDGET_PATCH)
        if check.refusal:
            raise Stop(RunStatus.failed, check.refusal)
        if check.root_run_id != self.run_id:
            # a subagent: its run family's approvers are its root's, so the root stops and asks
            raise Stop(RunStatus.failed, f"the run family's budget is reached (${check.spent_usd:,.4f} of "
                                         f"${check.limit_usd:,.2f}); run {check.root_run_id} waits for a raise")
        now = workflow.now()
        self.pending = PendingApproval(
            approval_id=check.request_id, tool="budget", kind="budget",
            arguments={"spent_usd": round(check.spent_usd, 6), "limit_usd": round(check.limit_usd, 6),
                       "root_run_id": check.root_run_id},
            action_hash=hashlib.sha256(check.request_id.encode()).hexdigest(),
            state_version=self.state.version, requested_at=now, expires_at=now + BUDGET_REQUEST_DISPLAY,
        )
        self.budget_answer, self.budget_deciding = None, False
        self.status = RunStatus.waiting_approval  # with the request, so a query never sees one without the other
        self.reason = f"budget reached: ${check.spent_usd:,.4f} of ${check.limit_usd:,.2f}"
        await self._record_request(BudgetRequested(request_id=check.request_id, spent_usd=check.spent_usd,
                                           limit_usd=check.limit_usd, root_run_id=check.root_run_id))
        self._notify("budget_requested", approval_id=check.request_id)
        await workflow.wait_condition(lambda: self.budget_answer is not None or self.cancel_requested)
        self.pending = None
        if self.status is RunStatus.waiting_approval:
            self.status = RunStatus.running
        answer = self._take_budget_answer()
        if answer is None:
            return  # cancelled: the turn boundary ends the run
        if answer.decision == "reject":
            why = f": {answer.reason}" if answer.reason else ""
            raise Stop(RunStatus.cancelled, f"budget reached (${check.spent_usd:,.4f} of ${check.limit_usd:,.2f}); "
                                            f"{answer.approver} did not raise it{why}")
        self.reason = ""

    def _take_budget_answer(self) -> BudgetInput | None:
        """The answer an update handler recorded while the wait ran (read through a call: the
        handler sets it concurrently), cleared for the next request."""
        answer, self.budget_answer = self.budget_answer, None
        return answer

    async def _budget_warn(self, check: BudgetCheck | None) -> None:
        """Warn once per budget when the family has spent 80% of it."""
        if check is None or not check.warn or self.cursor.budget_warned_usd == check.limit_usd:
            return
        if not self._patched(BUDGET_PATCH):
            return
        self.cursor.budget_warned_usd = check.limit_usd
        await self._record(BudgetWarning(spent_usd=check.spent_usd, limit_usd=check.limit_usd))
        self._notify("budget_warning")

    @workflow.update(name="raise_budget")
    async def raise_budget(self, inp: BudgetInput) -> str:
        assert self.pending is not None
        self.budget_deciding = True
        request_id = self.pending.approval_id
        try:
            await self._act(Activities.decide_budget, BudgetDecisionInput(
                run_id=self.run_id, request_id=request_id, approver=inp.approver, decision=inp.decision,
                by_usd=inp.by_usd, reason=inp.reason, proof=inp.proof), opt.GRANT)
        except ActivityError as err:
            self.budget_deciding = False
            cause = err.cause.message if isinstance(err.cause, ApplicationError) else str(err)
            if error_type(err) is ErrorType.PROOF_REFUSED:  # audited by the activity as approval_refused
                raise ApplicationError(f"the budget decision on {request_id} was refused: {cause}; the request is "
                                       "still open", type=REFUSAL_AUDITED) from err
            raise ApplicationError(f"the budget decision on {request_id} could not be recorded ({cause}); the "
                                   "request is still open: try again") from err
        self.budget_answer = inp
        if inp.decision == "reject":
            return f"rejected budget request {request_id} as {inp.approver}: the run ends"
        return f"raised the budget by ${inp.by_usd:,.2f} as {inp.approver} ({request_id}); the run goes on"

    @raise_budget.validator
    def _validate_raise_budget(self, inp: BudgetInput) -> None:
        if self.status.finished:
            raise ApplicationError(f"run {self.run_id} is {self.status.value}; it has no budget to raise")
        if self.pending is None or self.pending.kind != "budget":
            raise ApplicationError(f"run {self.run_id} is not waiting for a budget raise (status {self.status.value})")
        if self.request_unaudited:
            raise ApplicationError(f"run {self.run_id} is still writing its budget request to the audit: "
                                   "ask again in a moment (`longrun status RUN` shows it once it is written)")
        if inp.request_id and inp.request_id != self.pending.approval_id:
            raise ApplicationError(f"budget request {inp.request_id!r} is not the pending one ({self.pending.approval_id})")
        approvers = self.spec.approvers if self.spec else []
        if inp.approver not in approvers:
            raise ApplicationError(f"{inp.approver!r} is not an approver of run {self.run_id}; approvers: "
                                   f"{', '.join(approvers) or '(none)'}")
        if self.budget_answer is not None or self.budget_deciding:
            raise ApplicationError(f"budget request {self.pending.approval_id} was already answered")
        if inp.decision == "raise" and inp.by_usd < 0.01:
            raise ApplicationError("--by must be at least 0.01 (US dollars)")
        if inp.proof is None:
            raise ApplicationError("no signed proof: sign the raise with your key: `longrun raise-budget RUN --by USD "
                                   "--as NAME` reads it from $LONGRUN_HOME/keys/NAME.pem (or --key PATH)")
        try:
            record = inp.proof.record()
        except ValueError as exc:
            raise ApplicationError(f"malformed proof: {exc}") from exc
        if not isinstance(record, BudgetRecord):
            raise ApplicationError("the proof is not a signed budget decision: sign it with `longrun raise-budget`")
        if record.run_id != self.run_id or record.request_id != self.pending.approval_id:
            raise ApplicationError(f"the signed record is for {record.run_id} {record.request_id}, not for "
                                   f"{self.run_id} {self.pending.approval_id}")
        if record.principal != inp.approver or record.decision != inp.decision:
            raise ApplicationError("the signed record names another approver or decision than the update")


__all__ = ["BUDGET_PATCH", "BudgetMixin"]
