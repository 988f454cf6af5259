"""The pending approval: asking for it, waiting for it, and the validated `approve` / `reject`
updates that answer it.

A request is answerable until one answer is recorded: a grant whose activity fails (the database
does not answer, say) leaves it answerable, audits the failure, and tells the approver to try
again. Every wait here also ends on `cancel`.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from longrun.activities.boundary import ErrorType, error_type
    from longrun.activities.contract import Activities
    from longrun.models.audit import ApprovalExpired, ApprovalFailed, ApprovalRejected, ApprovalRequested
    from longrun.models.io import (
        ApprovalDecision,
        ApproveInput,
        GateResult,
        GrantInput,
        RejectApprovalInput,
        RejectInput,
        ToolCallRef,
    )
    from longrun.models.run import PendingApproval, RunStatus
    from longrun.models.signed import DecisionRecord, Proof
    from longrun.workflows import options as opt
    from longrun.workflows.interface import REFUSAL_AUDITED
    from longrun.workflows.notifications import NotificationsMixin

GRANT_FAILURE_PATCH = "grant-failure-leaves-request-open"
"""A failed grant resets the request and audits the failure; cancel escapes a deciding wait
(histories recorded before this replay the old behaviour)."""
SIGNED_DECISIONS_PATCH = "signed-decisions"
"""A rejection is verified (its signed proof) by the `reject_approval` activity, which audits it;
histories recorded before this audited it through `record_event`."""

APPROVAL_WAIT_PATCH = "approval-wait-telemetry"
"""The decision activities get the request's time, for the approval span's wait (histories
recorded before this scheduled them without it)."""

NO_PROOF = ("no signed proof: `--as NAME` alone approves nothing. Sign the decision with your key: "
            "`longrun approve RUN --as NAME` reads it from $LONGRUN_HOME/keys/NAME.pem (or --key PATH); "
            "an administrator creates one with `longrun approvers add NAME`")


def proof_record(proof: Proof | None) -> DecisionRecord:
    """The decision record a proof carries, checked for shape only (the signature is the grant
    activity's job: it needs the registered key).

    Raises:
        ApplicationError: no proof, or not a decision record."""
    if proof is None:
        raise ApplicationError(NO_PROOF)
    try:
        record = proof.record()
    except ValueError as exc:
        raise ApplicationError(f"malformed proof: {exc}") from exc
    if not isinstance(record, DecisionRecord):
        raise ApplicationError("the proof is not a signed approval decision")
    return record


class ApprovalsMixin(NotificationsMixin):
    async def _wait_for_approval(self, gate: GateResult, call: ToolCallRef | None = None) -> str | None:
        """Wait for approve/reject, the request's expiry, a new constraint or cancellation.
        Returns None when approved, else the error text the model gets."""
        ttl = self.spec.approval_ttl_seconds if self.spec else 1800
        now = workflow.now()
        self.pending = PendingApproval(
            approval_id="apr-" + gate.action_hash[:16],
            tool=gate.tool,
            arguments=gate.arguments_preview,
            action_hash=gate.action_hash,
            state_version=gate.state_version,
            requested_at=now,
            expires_at=now + timedelta(seconds=ttl),
            call_seq=call.seq if call is not None else None,
            call_id=call.call_id if call is not None else None,
        )
        self.decision, self.voided, self.deciding = None, "", False
        await self._record_request(
            ApprovalRequested(
                approval_id=self.pending.approval_id, tool=gate.tool, arguments=gate.arguments_preview,
                action_hash=gate.action_hash, state_version=gate.state_version,
            )
        )
        self._notify("approval_requested", approval_id=self.pending.approval_id)
        self.status = RunStatus.waiting_approval
        try:
            await workflow.wait_condition(
                lambda: self.decision is not None or self.cancel_requested or bool(self.voided),
                timeout=timedelta(seconds=ttl),
            )
        except TimeoutError:
            if self.deciding:
                # an answer arrived just before the expiry and is being written: let it land
                if self._patched(GRANT_FAILURE_PATCH):
                    await workflow.wait_condition(
                        lambda: self.decision is not None or self.cancel_requested or not self.deciding
                    )
                else:
                    await workflow.wait_condition(lambda: self.decision is not None)
        pending, self.pending = self.pending, None
        if self.status is RunStatus.waiting_approval:  # a pause that arrived meanwhile stays
            self.status = RunStatus.running
        decision = self._answer()
        if decision is not None:
            self._notify("approval_decided", approval_id=pending.approval_id)
            if decision.verdict == "approved":
                return None
            return f"approval rejected by {decision.approver}: {decision.reason}"
        if self.cancel_requested:
            return "not run: the run was cancelled while waiting for approval"
        if self.voided:
            return f"approval request {pending.approval_id} voided: {self.voided}; propose the action again"
        await self._record(ApprovalExpired(approval_id=pending.approval_id))
        await self._ask_human(f"approval request {pending.approval_id} for {pending.tool} expired unanswered")
        return f"approval request {pending.approval_id} expired unanswered; the run waits for a human"

    def _answer(self) -> ApprovalDecision | None:
        """The decision an update handler recorded while the wait ran (read through a call, as
        the handlers set it concurrently)."""
        return self.decision

    def _check_decidable(self, approval_id: str, approver: str) -> None:
        if self.status.finished:
            raise ApplicationError(f"run {self.run_id} is {self.status.value}; nothing to approve")
        if self.pending is None:
            raise ApplicationError(f"run {self.run_id} has no pending approval (status {self.status.value})")
        if self.request_unaudited:
            raise ApplicationError(f"run {self.run_id} is still writing its approval request to the audit: "
                                   "ask again in a moment (`longrun status RUN` shows it once it is written)")
        if self.pending.kind == "budget":
            raise ApplicationError(f"run {self.run_id} waits for a budget raise ({self.pending.approval_id}), not an "
                                   f"approval: answer it with `longrun raise-budget {self.run_id} --by USD --as NAME` "
                                   "(or --reject)")
        if approval_id != self.pending.approval_id:
            raise ApplicationError(
                f"approval {approval_id!r} does not match the pending action: the pending approval is "
                f"{self.pending.approval_id} ({self.pending.tool}, action hash {self.pending.action_hash[:16]}...)"
            )
        approvers = self.spec.approvers if self.spec else []
        if approver not in approvers:
            raise ApplicationError(
                f"{approver!r} is not an approver of run {self.run_id}; approvers: {', '.join(approvers) or '(none)'}"
            )
        if self.decision is not None or self.deciding:
            raise ApplicationError(f"approval {approval_id} was already decided")
        if workflow.now() >= self.pending.expires_at:
            raise ApplicationError(f"approval {approval_id} expired at {self.pending.expires_at.isoformat()}; it can no longer be used")

    @workflow.update(name="approve")
    async def approve(self, inp: ApproveInput) -> str:
        assert self.pending is not None and self.spec is not None
        self.deciding = True
        pending = self.pending
        now = workflow.now()
        ttl = inp.ttl_seconds or self.spec.approval_ttl_seconds
        call = (ToolCallRef(seq=pending.call_seq, call_id=pending.call_id, index=0, name=pending.tool)
                if pending.call_seq is not None and pending.call_id is not None else None)
        grant = GrantInput(
            run_id=self.run_id, approval_id=pending.approval_id, approver=inp.approver,
            action_hash=pending.action_hash, tool=pending.tool, approved_at=now,
            expires_at=now + timedelta(seconds=ttl), proof=inp.proof, state_version=pending.state_version,
            call=call, edit_id=inp.edit_id,
            requested_at=pending.requested_at if self._patched(APPROVAL_WAIT_PATCH) else None,
        )
        if not self._patched(GRANT_FAILURE_PATCH):
            self._set_state(await self._act(Activities.grant_approval, grant))
        else:
            try:
                self._set_state(await self._act(Activities.grant_approval, grant, opt.GRANT))
            except ActivityError as err:
                self.deciding = False  # the request stays answerable
                cause = err.cause.message if isinstance(err.cause, ApplicationError) else str(err)
                if error_type(err) is ErrorType.PROOF_REFUSED:  # audited by the activity as approval_refused
                    raise ApplicationError(f"the approval of {pending.approval_id} was refused: {cause}; "
                                           "nothing was granted and the request is still open",
                                           type=REFUSAL_AUDITED) from err
                await self._record_grant_failure(pending.approval_id, inp.approver, cause)
                raise ApplicationError(
                    f"the approval of {pending.approval_id} could not be recorded ({cause}); nothing was granted "
                    "and the request is still open: try again"
                ) from err
        self.decision = ApprovalDecision(verdict="approved", approver=inp.approver)
        edited = " with the arguments as you edited them" if inp.edit_id is not None else ""
        return f"approved {pending.approval_id} ({pending.tool}){edited} as {inp.approver}, valid {ttl} s"

    async def _record_grant_failure(self, approval_id: str, approver: str, cause: str) -> None:
        """Audit a failed grant; when even that fails (the database is down), the approver's
        error still says it."""
        try:
            await self._record(ApprovalFailed(approval_id=approval_id, approver=approver, reason=cause[:2000]))
        except ActivityError:
            workflow.logger.warning("could not audit the failed grant of %s", approval_id)

    @approve.validator
    def _validate_approve(self, inp: ApproveInput) -> None:
        self._check_decidable(inp.approval_id, inp.approver)
        record = self._check_record(inp.proof, "approve", inp.approval_id, inp.approver)
        assert self.pending is not None
        if record.ttl_seconds != inp.ttl_seconds:
            raise ApplicationError("the signed record names another approval lifetime than the update")
        if record.edit_of is None:
            if inp.edit_id is not None:
                raise ApplicationError("the update carries an edit the signed record does not name")
        elif record.edit_of != self.pending.action_hash or record.edit_id != inp.edit_id:
            raise ApplicationError("the signed record edits another action than the pending one")

    def _check_record(self, proof: Proof | None, verb: str, approval_id: str, approver: str) -> DecisionRecord:
        """The signed record is a `verb` of exactly this run, approval and (unless edited) action,
        by `approver`: checked before the update is accepted, so a mismatched proof writes nothing."""
        record = proof_record(proof)
        assert self.pending is not None
        if record.decision != verb:
            raise ApplicationError(f"the signed record is a {record.decision}, not a {verb}")
        if record.run_id != self.run_id or record.approval_id != approval_id:
            raise ApplicationError(f"the signed record is for {record.run_id} {record.approval_id}, not for "
                                   f"{self.run_id} {approval_id}")
        if record.principal != approver:
            raise ApplicationError(f"the signed record is by {record.principal}, but the update names {approver}")
        if record.edit_of is None and record.action_hash != self.pending.action_hash:
            raise ApplicationError(f"the signed record is for action {record.action_hash[:16]}..., but the pending "
                                   f"action is {self.pending.action_hash[:16]}...: a signature covers one exact action")
        return record

    @workflow.update(name="reject")
    async def reject(self, inp: RejectInput) -> str:
        assert self.pending is not None
        self.deciding = True
        pending = self.pending
        rejected = ApprovalRejected(approval_id=pending.approval_id, approver=inp.approver, reason=inp.reason)
        if not self._patched(GRANT_FAILURE_PATCH):
            await self._record(rejected)
        else:
            try:
                if self._patched(SIGNED_DECISIONS_PATCH):
                    await self._act(Activities.reject_approval, RejectApprovalInput(
                        run_id=self.run_id, approval_id=pending.approval_id, approver=inp.approver,
                        action_hash=pending.action_hash, reason=inp.reason, proof=inp.proof,
                        requested_at=pending.requested_at if self._patched(APPROVAL_WAIT_PATCH) else None),
                        opt.GRANT)
                else:
                    await self._act(Activities.record_event, self._event_input(rejected), opt.GRANT)
            except ActivityError as err:
                self.deciding = False
                cause = err.cause.message if isinstance(err.cause, ApplicationError) else str(err)
                if error_type(err) is ErrorType.PROOF_REFUSED:
                    raise ApplicationError(f"the rejection of {pending.approval_id} was refused: {cause}; the "
                                           "request is still open", type=REFUSAL_AUDITED) from err
                raise ApplicationError(
                    f"the rejection of {pending.approval_id} could not be recorded ({cause}); the request is still "
                    "open: try again"
                ) from err
        self.decision = ApprovalDecision(verdict="rejected", approver=inp.approver, reason=inp.reason)
        return f"rejected {pending.approval_id} ({pending.tool}) as {inp.approver}"

    @reject.validator
    def _validate_reject(self, inp: RejectInput) -> None:
        self._check_decidable(inp.approval_id, inp.approver)
        if self._check_record(inp.proof, "reject", inp.approval_id, inp.approver).reason != inp.reason:
            raise ApplicationError("the signed record gives another reason than the update")
