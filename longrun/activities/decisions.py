"""Human decisions, verified: approvals, rejections and standing approvals (scopes).

Each activity checks the decision's signed proof against the key Postgres has registered for
the principal it names *before anything is written*: the signature, the key (registered, not
revoked, not expired), the principal's role, the record's freshness, and that the record is
about exactly this run, this approval id and this action hash (or, for an edit, the stored
edited call). A proof that fails is audited as `approval_refused` with the reason and raised as
`ProofRefused`, so the request stays answerable and the approver is told what to do. The
workflow's validators checked the same fields without cryptography; this is where the key is.

The proof is kept in the audit event, so `audit --verify` can check it again from Postgres alone
(`longrun.auth.audit_check`).
"""

from __future__ import annotations

from datetime import UTC, datetime

from longrun.activities.base import ActivityBase, brief
from longrun.activities.contract import Activities, implements
from longrun.auth.check import Record, check_proof
from longrun.auth.scope_ending import KEY_OWNER, end_scopes, end_scopes_of_inactive_keys
from longrun.auth.scopes import constraints_sha256, ttl_refusal
from longrun.errors import ProofRefused
from longrun.models.audit import ApprovalGranted, ApprovalRefused, ApprovalRejected, ScopeEnded, ScopeGranted
from longrun.models.canonical import action_hash
from longrun.models.io import GrantInput, RejectApprovalInput, RunRef, ScopeGrantInput, StateBrief
from longrun.models.signed import DecisionRecord, Proof, ScopeRecord, ScopeRevokeRecord
from longrun.models.state import Approval, ApprovalEdit, Scope, TaskState, utcnow
from longrun.telemetry import spans


class DecisionActivities(ActivityBase):
    def _verified(self, run_id: str, proof: Proof | None, approver: str, what: str) -> Record:
        """The proof's record, if it holds now for a principal among the run's approvers.

        Raises:
            ProofRefused: audited as `approval_refused` first."""
        try:
            credential = self.store.credential(proof.key_id) if proof is not None else None
            record = check_proof(proof, credential, utcnow())
            if record.run_id != run_id:
                raise ProofRefused(f"the record is for run {record.run_id}, not {run_id}: sign for this run")
            if record.principal != approver:
                raise ProofRefused(f"the record is signed by {record.principal}, but the decision names {approver}")
            if approver not in self.spec(run_id).approvers:
                raise ProofRefused(f"{approver} is not an approver of run {run_id}")
        except ProofRefused as exc:
            self._refuse(run_id, what, approver, str(exc))
            raise
        return record

    def _refuse(self, run_id: str, what: str, approver: str, reason: str) -> None:
        self.audit(run_id, ApprovalRefused(approval_id=what, approver=approver or "(none)", reason=reason[:2000]),
                   actor=f"human:{approver or 'unknown'}")

    def _decision(self, run_id: str, proof: Proof | None, approver: str, approval_id: str, verb: str) -> DecisionRecord:
        record = self._verified(run_id, proof, approver, approval_id)
        if not isinstance(record, DecisionRecord) or record.decision != verb or record.approval_id != approval_id:
            reason = f"the record is not a signed {verb} of {approval_id}"
            self._refuse(run_id, approval_id, approver, reason)
            raise ProofRefused(reason)
        return record

    def _bound_action(self, inp: GrantInput, record: DecisionRecord) -> tuple[str, ApprovalEdit | None]:
        """The action hash the approval binds, checked against the pending action (or, for an
        edit, against the stored edited call, re-hashed here).

        Raises:
            ProofRefused: the record is for another action, or the edit does not match."""
        if record.edit_of is None:
            if record.action_hash != inp.action_hash:
                raise ProofRefused(f"the record approves action {record.action_hash[:16]}..., but the pending action is "
                                   f"{inp.action_hash[:16]}...: a signature covers one exact action")
            return record.action_hash, None
        if record.edit_of != inp.action_hash or record.edit_id is None or inp.call is None or inp.state_version is None:
            raise ProofRefused("the record edits another action than the pending one")
        edit = self.store.call_edit(inp.run_id, record.edit_id)
        if (edit is None or edit["approval_id"] != inp.approval_id or edit["call_seq"] != inp.call.seq
                or edit["call_id"] != inp.call.call_id or edit["edited_by"] != record.principal):
            raise ProofRefused(f"edit {record.edit_id} is not an edit of this call by {record.principal}")
        rehashed = action_hash(inp.tool, edit["arguments"], inp.state_version)
        if rehashed != record.action_hash or edit["action_hash"] != record.action_hash:
            raise ProofRefused(f"edit {record.edit_id} does not hash to the action the record approves")
        return record.action_hash, ApprovalEdit(edit_id=record.edit_id, call_seq=inp.call.seq, call_id=inp.call.call_id,
                                                original_action_hash=inp.action_hash)

    @implements(Activities.grant_approval)
    def grant_approval(self, inp: GrantInput) -> StateBrief:
        """See `_grant`; traced as the span `approval approve` (who, and how long the request waited)."""
        with spans.approval_span(inp.run_id, inp.approval_id, inp.approver, "approve", inp.requested_at,
                                 inp.approved_at, self.redactor):
            return self._grant(inp)

    def _grant(self, inp: GrantInput) -> StateBrief:
        """Verify a human's signed approval, then write it into TaskState and the audit. Idempotent.

        Re-applied on the head: the approval is bound to its action hash (tool, arguments and the
        version the action was proposed at), not to the version it happens to be written on.
        Histories recorded before signed decisions replay with no proof: their grants were
        already written, so the idempotent return below answers them without checking."""
        head = self.head(inp.run_id)
        if self.approval_of(inp.run_id, inp.approval_id) is not None:  # granted already (maybe used since)
            return brief(head)
        record = self._decision(inp.run_id, inp.proof, inp.approver, inp.approval_id, "approve")
        try:
            bound, edit = self._bound_action(inp, record)
        except ProofRefused as exc:
            self._refuse(inp.run_id, inp.approval_id, inp.approver, str(exc))
            raise

        def mutate(state: TaskState) -> TaskState:
            if any(a.id == inp.approval_id for a in state.approvals):
                return state
            approval = Approval(id=inp.approval_id, scope=inp.tool, action_hash=bound, approved_by=inp.approver,
                                approved_at=inp.approved_at, expires_at=inp.expires_at, key_id=record.key_id, edit=edit)
            return state.model_copy(update={"approvals": [*state.approvals, approval]})

        new = self.reapply_on_head(inp.run_id, mutate, f"human:{inp.approver}", f"approval {inp.approval_id}")
        self.audit(
            inp.run_id,
            ApprovalGranted(approval_id=inp.approval_id, approver=inp.approver, expires_at=inp.expires_at,
                            action_hash=bound, proof=inp.proof,
                            original_action_hash=inp.action_hash if edit is not None else None,
                            edit_id=edit.edit_id if edit is not None else None),
            actor=f"human:{inp.approver}",
        )
        return brief(new)

    @implements(Activities.reject_approval)
    def reject_approval(self, inp: RejectApprovalInput) -> None:
        """Verify a human's signed rejection and audit it (the workflow tells the model why)."""
        with spans.approval_span(inp.run_id, inp.approval_id, inp.approver, "reject", inp.requested_at, utcnow(),
                                 self.redactor):
            self._reject(inp)

    def _reject(self, inp: RejectApprovalInput) -> None:
        record = self._decision(inp.run_id, inp.proof, inp.approver, inp.approval_id, "reject")
        if record.action_hash != inp.action_hash or record.reason != inp.reason:
            reason = "the record rejects another action, or gives another reason, than the update carries"
            self._refuse(inp.run_id, inp.approval_id, inp.approver, reason)
            raise ProofRefused(reason)
        self.audit(inp.run_id, ApprovalRejected(approval_id=inp.approval_id, approver=inp.approver, reason=inp.reason,
                                                action_hash=inp.action_hash, proof=inp.proof),
                   actor=f"human:{inp.approver}")

    @implements(Activities.grant_scope)
    def grant_scope(self, inp: ScopeGrantInput) -> StateBrief:
        """Verify a signed standing approval and add it to the task state. Idempotent by scope id.
        A scope granted under other constraints than the run's current ones is refused (a
        constraint arrived after the approver looked)."""
        record = self._verified(inp.run_id, inp.proof, inp.approver, "scope")
        if not isinstance(record, ScopeRecord):
            self._refuse(inp.run_id, "scope", inp.approver, "the record is not a scope grant")
            raise ProofRefused("the record is not a scope grant")
        head = self.head(inp.run_id)
        if self.scope_of(inp.run_id, record.scope_id) is not None:  # granted already (maybe closed since)
            return brief(head)
        too_long = ttl_refusal(record.expires_at - record.issued_at, self.deps.scope_max_ttl_seconds)
        if too_long is not None:
            self._refuse(inp.run_id, record.scope_id, inp.approver, too_long)
            raise ProofRefused(too_long)
        if record.constraints_sha256 != constraints_sha256(head.constraints):
            reason = "the run's constraints changed since the scope was signed: look at them again and grant anew"
            self._refuse(inp.run_id, record.scope_id, inp.approver, reason)
            raise ProofRefused(reason)
        scope = Scope(id=record.scope_id, tools=list(record.tools), paths=list(record.paths), max_uses=record.max_uses,
                      granted_by=record.principal, key_id=record.key_id, granted_at=utcnow(),
                      expires_at=datetime.fromtimestamp(record.expires_at, UTC),
                      constraints_sha256=record.constraints_sha256)

        def mutate(state: TaskState) -> TaskState:
            if state.scope(scope.id) is not None:
                return state
            return state.model_copy(update={"scopes": [*state.scopes, scope]})

        new = self.reapply_on_head(inp.run_id, mutate, f"human:{inp.approver}", f"scope {scope.id}")
        self.audit(inp.run_id, ScopeGranted(scope_id=scope.id, approver=inp.approver, tools=scope.tools,
                                            paths=scope.paths, max_uses=scope.max_uses, expires_at=scope.expires_at,
                                            proof=inp.proof), actor=f"human:{inp.approver}")
        return brief(new)

    @implements(Activities.end_scope)
    def end_scope(self, inp: ScopeGrantInput) -> StateBrief:
        """Verify a signed `revoke-grant` and end the scope. Idempotent."""
        record = self._verified(inp.run_id, inp.proof, inp.approver, "scope")
        if not isinstance(record, ScopeRevokeRecord):
            self._refuse(inp.run_id, "scope", inp.approver, "the record is not a scope revocation")
            raise ProofRefused("the record is not a scope revocation")
        head = self.head(inp.run_id)
        scope = self.scope_of(inp.run_id, record.scope_id)
        if scope is None:
            reason = f"run {inp.run_id} has no scope {record.scope_id}"
            self._refuse(inp.run_id, record.scope_id, inp.approver, reason)
            raise ProofRefused(reason)
        if scope.ended or head.scope(record.scope_id) is None:  # ended, or closed (used up, expired): not in force
            return brief(head)
        why = f"revoked by {inp.approver}"
        new = self.reapply_on_head(inp.run_id, lambda s: end_scopes(s, why, {record.scope_id}),
                                   f"human:{inp.approver}", f"end scope {record.scope_id}")
        self.audit(inp.run_id, ScopeEnded(scope_id=record.scope_id, by=inp.approver, reason=why, proof=inp.proof),
                   actor=f"human:{inp.approver}")
        return brief(new)


    @implements(Activities.end_revoked_scopes)
    def end_revoked_scopes(self, inp: RunRef) -> StateBrief:
        """End the scopes whose signing key was revoked or has expired, and audit each ending.

        Asked by a signal after `longrun approvers revoke`. The signal carries nothing: which keys
        are revoked is read from Postgres here, so whoever sends it can only make the worker look.
        Idempotent (a scope already ended stays as it is)."""
        new, ended = end_scopes_of_inactive_keys(self.store, self.head(inp.run_id), self.reapply_on_head)
        for scope_id, why in ended.items():
            self.audit(inp.run_id, ScopeEnded(scope_id=scope_id, by=KEY_OWNER, reason=why), actor=KEY_OWNER)
        return brief(new)


__all__ = ["KEY_OWNER", "DecisionActivities", "end_scopes", "end_scopes_of_inactive_keys"]
