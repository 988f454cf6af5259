"""`audit --verify`, second half: every recorded decision re-verified from Postgres alone.

The hash chains show that no row was changed *unless someone recomputed them*; a database
superuser can. What they cannot recompute is a signature. So for every decision in the audit
(approval granted or rejected, scope granted or ended by a person) this checks, from the audit
row and the `credentials` table only (Temporal is not asked):

- the row carries a proof, and the proof holds against the key registered for its principal *as
  it was when the row was written* (registered before, not yet revoked or expired, the record
  fresh then, the signature valid);
- the row says what the signed record says: the approver, the run, the approval id, the action
  hash (and, for an edit, the original action and the stored edited arguments, re-hashed), the
  reason of a rejection, the tools, globs, use limit and expiry of a scope;
- every approval and scope any version of the task state ever held is one of those verified
  decisions, with the same approver and action hash; every scope use names a verified scope
  within its limit;
- no scope and no approval was used after the key that signed it was revoked or expired (a use
  is a `scope_used` row, or the gate's `allow` under rule `approval`), give or take the clock
  skew between the host that revoked and the worker (`USE_GRACE_SECONDS`).

Each failure names the audit row (or state version) and what is wrong with it.

The rows come from a `DecisionSource`: the `Store` (`audit --verify`) or an evidence bundle
(`longrun verify-bundle`, no database): the same checks either way. So this module imports no
database driver.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from longrun.auth.check import Credential, Record, check_proof
from longrun.errors import ProofRefused
from longrun.models.audit import (
    ApprovalGranted,
    ApprovalRejected,
    ApprovalRequested,
    AuditEvent,
    BudgetDecided,
    GateVerdict,
    ScopeEnded,
    ScopeGranted,
    ScopeUsed,
)
from longrun.models.canonical import action_hash
from longrun.models.gate import GateRule
from longrun.models.signed import CLOCK_SKEW_SECONDS, BudgetRecord, DecisionRecord, ScopeRecord, ScopeRevokeRecord
from longrun.models.state import TaskState

AUDIT_GRACE_SECONDS = 120
"""A decision row is written a moment after the grant verified its proof (a retried activity,
a slow database): judged at the row's time, the record may be up to this much past its lifetime."""
USE_GRACE_SECONDS = CLOCK_SKEW_SECONDS
"""A revocation is stamped by the clock of the host that revoked, a use by the worker's: a use is
flagged when it is later than the revocation by more than the clocks may disagree."""


class AuditRow(Protocol):
    """An audit row as the checks read it (`longrun.store.AuditRecord` is one)."""

    @property
    def seq(self) -> int: ...
    @property
    def kind(self) -> str: ...
    @property
    def event(self) -> AuditEvent: ...
    @property
    def actor(self) -> str: ...
    @property
    def created_at(self) -> datetime: ...


class StateRow(Protocol):
    """A state version as the checks read it (`longrun.store.StateVersionRecord` is one)."""

    @property
    def version(self) -> int: ...
    @property
    def state(self) -> TaskState: ...


class DecisionSource(Protocol):
    """Where the rows and keys come from: the `Store`, or an evidence bundle."""

    def audit(self, run_id: str) -> Sequence[AuditRow]: ...
    def state_history(self, run_id: str) -> Sequence[StateRow]: ...
    def credential(self, key_id: str) -> Credential | None: ...
    def call_edit(self, run_id: str, edit_id: int) -> dict[str, Any] | None: ...


@dataclass(frozen=True)
class DecisionProblem:
    run_id: str
    where: str
    """`audit row N` or `state version N`."""
    reason: str

    def __str__(self) -> str:
        return f"run {self.run_id}: decision check failed at {self.where}: {self.reason}"


@dataclass(frozen=True)
class DecisionReport:
    run_id: str
    checked: int
    problems: list[DecisionProblem]

    @property
    def ok(self) -> bool:
        return not self.problems

    def __str__(self) -> str:
        if self.ok:
            return f"{self.checked} signed decisions verify against the registered keys"
        return "; ".join(str(p) for p in self.problems)


def _record_of(store: DecisionSource, rec: AuditRow, principal: str) -> Record:
    proof = getattr(rec.event, "proof", None)
    if proof is None:
        raise ProofRefused("the decision carries no signed proof")
    record = check_proof(proof, store.credential(proof.key_id), rec.created_at, grace_seconds=AUDIT_GRACE_SECONDS)
    if record.principal != principal:
        raise ProofRefused(f"the row names {principal!r} but the record is signed by {record.principal!r}")
    if rec.actor != f"human:{principal}":
        raise ProofRefused(f"the row's actor is {rec.actor!r}, not human:{principal}")
    return record


def _check_granted(store: DecisionSource, run_id: str, e: ApprovalGranted, record: Record,
                   asked: ApprovalRequested | None) -> None:
    if not isinstance(record, DecisionRecord) or record.decision != "approve":
        raise ProofRefused("the signed record is not an approval")
    if (record.run_id, record.approval_id) != (run_id, e.approval_id):
        raise ProofRefused(f"the signed record approves {record.run_id} {record.approval_id}, not {e.approval_id}")
    if record.action_hash != e.action_hash:
        raise ProofRefused(f"the row's action hash {e.action_hash[:16]}... is not the signed {record.action_hash[:16]}...")
    if (record.edit_of, record.edit_id) != (e.original_action_hash, e.edit_id):
        raise ProofRefused("the row's edit does not match the signed record's")
    if record.edit_id is not None:
        edit = store.call_edit(run_id, record.edit_id)
        if edit is None or asked is None:
            raise ProofRefused(f"the stored edit {record.edit_id} or its approval request is missing")
        if action_hash(asked.tool, edit["arguments"], asked.state_version) != record.action_hash:
            raise ProofRefused(f"the stored edit {record.edit_id} does not hash to the signed action")


def _check_rejected(run_id: str, e: ApprovalRejected, record: Record) -> None:
    if not isinstance(record, DecisionRecord) or record.decision != "reject":
        raise ProofRefused("the signed record is not a rejection")
    if (record.run_id, record.approval_id, record.reason) != (run_id, e.approval_id, e.reason):
        raise ProofRefused("the row's approval id or reason is not the signed record's")
    if e.action_hash is not None and record.action_hash != e.action_hash:
        raise ProofRefused("the row's action hash is not the signed record's")


def _check_scope(run_id: str, e: ScopeGranted, record: Record) -> None:
    if not isinstance(record, ScopeRecord):
        raise ProofRefused("the signed record is not a scope grant")
    signed = (record.run_id, record.scope_id, list(record.tools), list(record.paths), record.max_uses,
              datetime.fromtimestamp(record.expires_at, UTC))
    if signed != (run_id, e.scope_id, list(e.tools), list(e.paths), e.max_uses, e.expires_at):
        raise ProofRefused("the row's scope (tools, paths, uses or expiry) is not the signed record's")


def _check_used_in_time(credential: Credential | None, rec: AuditRow, what: str) -> None:
    """A use must come before its signing key was revoked or expired (see `USE_GRACE_SECONDS`)."""
    if credential is None:
        return  # the grant itself was flagged: its key is not registered
    grace = timedelta(seconds=USE_GRACE_SECONDS)
    for ended, how in ((credential.revoked_at, "revoked"), (credential.expires_at, "expired")):
        if ended is not None and rec.created_at > ended + grace:
            raise ProofRefused(f"{what} was used at {rec.created_at:%Y-%m-%d %H:%M:%S} UTC, after key "
                               f"{credential.key_id} of {credential.principal} was {how} at "
                               f"{ended:%Y-%m-%d %H:%M:%S} UTC: what a key granted is never used after that")


def verify_decisions(store: DecisionSource, run_id: str) -> DecisionReport:
    """Re-verify every decision of the run (see the module docstring)."""
    problems: list[DecisionProblem] = []
    granted: dict[str, tuple[str, str]] = {}
    scopes: dict[str, ScopeGranted] = {}
    used: dict[str, int] = {}
    asked: dict[str, ApprovalRequested] = {}
    approval_keys: dict[str, str] = {}
    """action hash -> the key that signed its approval."""
    keys: dict[str, Credential | None] = {}

    def key(key_id: str) -> Credential | None:
        if key_id not in keys:
            keys[key_id] = store.credential(key_id)
        return keys[key_id]

    checked = 0
    records = store.audit(run_id)
    for rec in records:
        e = rec.event
        where = f"audit row {rec.seq} ({rec.kind})"
        try:
            if isinstance(e, ApprovalRequested):
                asked[e.approval_id] = e
            elif isinstance(e, ApprovalGranted):
                checked += 1
                _check_granted(store, run_id, e, _record_of(store, rec, e.approver), asked.get(e.approval_id))
                granted[e.approval_id] = (e.approver, e.action_hash)
                if e.proof is not None:  # `_record_of` refused a row without one
                    approval_keys[e.action_hash] = e.proof.key_id
            elif isinstance(e, ApprovalRejected):
                checked += 1
                _check_rejected(run_id, e, _record_of(store, rec, e.approver))
            elif isinstance(e, ScopeGranted):
                checked += 1
                _check_scope(run_id, e, _record_of(store, rec, e.approver))
                scopes[e.scope_id] = e
            elif isinstance(e, ScopeEnded) and e.proof is not None:
                checked += 1
                record = _record_of(store, rec, e.by)
                if not isinstance(record, ScopeRevokeRecord) or record.scope_id != e.scope_id:
                    raise ProofRefused("the signed record does not end this scope")
            elif isinstance(e, BudgetDecided):
                checked += 1
                record = _record_of(store, rec, e.approver)
                if (not isinstance(record, BudgetRecord) or record.run_id != run_id or record.request_id != e.request_id
                        or record.decision != e.decision or record.by_cents != round(e.by_usd * 100)):
                    raise ProofRefused("the signed record is not this budget decision (run, request, decision, amount)")
            elif isinstance(e, ScopeUsed):
                scope = scopes.get(e.scope_id)
                used[e.scope_id] = used.get(e.scope_id, 0) + 1
                if scope is None:
                    raise ProofRefused(f"scope {e.scope_id} was never granted by a verified decision")
                if used[e.scope_id] > scope.max_uses:
                    raise ProofRefused(f"scope {e.scope_id} used {used[e.scope_id]} times, more than its {scope.max_uses}")
                _check_used_in_time(key(scope.proof.key_id), rec, f"scope {e.scope_id}")
            elif (isinstance(e, GateVerdict) and e.verdict == "allow" and e.rule == GateRule.approval.value
                  and e.action_hash in approval_keys):
                _check_used_in_time(key(approval_keys[e.action_hash]), rec, f"the approval of action {e.action_hash[:16]}...")
        except ProofRefused as exc:
            problems.append(DecisionProblem(run_id, where, str(exc)))
    reported: set[str] = set()
    for version in store.state_history(run_id):
        for item, ok in [(a.id, granted.get(a.id) == (a.approved_by, a.action_hash)) for a in version.state.approvals] + [
                (sc.id, sc.id in scopes and (scopes[sc.id].approver, scopes[sc.id].tools, scopes[sc.id].paths,
                                             scopes[sc.id].max_uses) == (sc.granted_by, sc.tools, sc.paths, sc.max_uses))
                for sc in version.state.scopes]:
            if not ok and item not in reported:
                reported.add(item)
                problems.append(DecisionProblem(run_id, f"state version {version.version}",
                                                f"{item} is not a verified signed decision in the audit (its approver, "
                                                "action or scope differs from what was signed, or nothing was)"))
    return DecisionReport(run_id, checked, _first_per_place(problems))


def _first_per_place(problems: list[DecisionProblem]) -> list[DecisionProblem]:
    seen: set[str] = set()
    out = []
    for p in problems:
        if p.where not in seen:
            seen.add(p.where)
            out.append(p)
    return out


__all__ = ["AUDIT_GRACE_SECONDS", "USE_GRACE_SECONDS", "AuditRow", "DecisionProblem", "DecisionReport", "DecisionSource",
           "StateRow", "verify_decisions"]
