"""Standing approvals: the validated `grant_scope` and `revoke_scope` updates.

A scope is a signed record (tools, workspace path globs, a use limit, an expiry, the constraints
it was granted under); the `grant_scope` activity verifies its signature against the registered
key before it is written into the task state, and the gate then checks every use against it.
The validators check the record's shape and that it is for this run, by one of its approvers;
a refused update writes nothing. A scope granted while an approval is pending does not answer
that request: approve or reject it as usual.

`signing_keys_revoked` (a signal, sent by `longrun approvers revoke`) ends the scopes whose key
was revoked; it carries nothing, because the activity reads the keys from Postgres.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from longrun.activities.boundary import ErrorType, error_type
    from longrun.activities.contract import Activities
    from longrun.models.io import RunRef, ScopeGrantInput, ScopeInput
    from longrun.models.signed import ScopeRecord, ScopeRevokeRecord
    from longrun.workflows import options as opt
    from longrun.workflows.base import RunBase
    from longrun.workflows.interface import REFUSAL_AUDITED, SIGNING_KEYS_REVOKED

KEY_REVOCATION_PATCH = "key-revocation-ends-scopes"
"""The `signing_keys_revoked` signal ends the scopes of revoked keys (no history recorded before
it holds the signal; the patch marks the runs that can act on it)."""


class ScopesMixin(RunBase):
    def _check_scope_update(self, inp: ScopeInput, kind: type[ScopeRecord] | type[ScopeRevokeRecord]) -> None:
        if self.status.finished:
            raise ApplicationError(f"run {self.run_id} is {self.status.value}; nothing to grant or revoke")
        approvers = self.spec.approvers if self.spec else []
        if inp.approver not in approvers:
            raise ApplicationError(
                f"{inp.approver!r} is not an approver of run {self.run_id}; approvers: {', '.join(approvers) or '(none)'}"
            )
        try:
            record = inp.proof.record()
        except ValueError as exc:
            raise ApplicationError(f"malformed proof: {exc}") from exc
        if not isinstance(record, kind):
            raise ApplicationError("the proof is not a signed " + ("scope grant" if kind is ScopeRecord else "scope revocation"))
        if record.run_id != self.run_id or record.principal != inp.approver:
            raise ApplicationError(f"the signed record is for run {record.run_id} by {record.principal}, not for "
                                   f"{self.run_id} by {inp.approver}")

    async def _scope_activity(self, inp: ScopeInput, grant: bool) -> str:
        declaration = Activities.grant_scope if grant else Activities.end_scope
        try:
            self._set_state(await self._act(declaration, ScopeGrantInput(run_id=self.run_id, approver=inp.approver,
                                                                         proof=inp.proof), opt.GRANT))
        except ActivityError as err:
            cause = err.cause.message if isinstance(err.cause, ApplicationError) else str(err)
            audited = REFUSAL_AUDITED if error_type(err) is ErrorType.PROOF_REFUSED else None
            raise ApplicationError(f"{'grant' if grant else 'revoke-grant'} refused: {cause}", type=audited) from err
        record = inp.proof.record()
        assert isinstance(record, (ScopeRecord, ScopeRevokeRecord))
        if isinstance(record, ScopeRecord):
            return (f"granted {record.scope_id}: {', '.join(record.tools)} on {', '.join(record.paths)}, "
                    f"at most {record.max_uses} uses, as {inp.approver}")
        return f"ended {record.scope_id} as {inp.approver}"

    @workflow.update(name="grant_scope")
    async def grant_scope(self, inp: ScopeInput) -> str:
        return await self._scope_activity(inp, grant=True)

    @grant_scope.validator
    def _validate_grant_scope(self, inp: ScopeInput) -> None:
        self._check_scope_update(inp, ScopeRecord)

    @workflow.update(name="revoke_scope")
    async def revoke_scope(self, inp: ScopeInput) -> str:
        return await self._scope_activity(inp, grant=False)

    @revoke_scope.validator
    def _validate_revoke_scope(self, inp: ScopeInput) -> None:
        self._check_scope_update(inp, ScopeRevokeRecord)

    @workflow.signal(name=SIGNING_KEYS_REVOKED, unfinished_policy=workflow.HandlerUnfinishedPolicy.ABANDON)
    async def signing_keys_revoked(self) -> None:
        """A key was revoked: end the scopes it signed, now rather than at their next use (where
        the gate refuses them anyway, so a run that finishes meanwhile loses nothing)."""
        if self.status.finished or not self._patched(KEY_REVOCATION_PATCH):
            return
        try:
            ended = await self._act(Activities.end_revoked_scopes, RunRef(run_id=self.run_id), opt.DEFAULT)
        except ActivityError:  # bookkeeping only: a failure here must not fail the run
            workflow.logger.warning("could not end the scopes of revoked keys in run %s", self.run_id)
            return
        if ended.version > self.state.version:  # the main loop may have moved past it meanwhile
            self._set_state(ended)
