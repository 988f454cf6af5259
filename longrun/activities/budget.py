"""Budgets that hold: the run's tokens against its token cap and the family's spend against its
budget before every model call, and the signed answer to a budget request.

The checks read the ledger in PostgreSQL (`longrun.store.spend`), never a counter in workflow
memory: a crash, a retry or a subagent on another worker cannot make them forget a request (an
answer replayed after a crash, which the workflow never counts, is in the ledger once). The
tokens come with the turn's first read (`ScopedAccess.ledger_tokens`): no statement of their own.
A run's token cap counts its subagents' tokens (the moment they are answered, not when the child
ends); its dollars count against the family's budget, the root's `--max-cost`. The
budget is the root run's `--max-cost` plus every signed raise of the family; a subagent spends
its root's budget, so its spend can stop its parent.

A raise is a `BudgetRecord` signed with an approver's registered key, verified here as an
approval is (`DecisionActivities._verified`): a proof that does not hold is audited as
`approval_refused` (naming the budget request) and raised as `ProofRefused`, so the request stays
open and the approver is told what to do.
"""

from __future__ import annotations

import hashlib

from longrun.activities.base import ActivityBase
from longrun.activities.contract import Activities, implements
from longrun.activities.decisions import DecisionActivities
from longrun.errors import ProofRefused
from longrun.models.audit import BudgetDecided
from longrun.models.io import BudgetCheck, BudgetDecisionInput
from longrun.models.signed import BudgetRecord

WARN_AT = 0.8
"""The share of the budget at which the run warns (once per budget)."""


def budget_request_id(run_id: str, turn: int, limit_usd: float) -> str:
    """The id of the budget request a run makes at `turn` under `limit_usd`: the same on a retry,
    another after a raise."""
    return "bud-" + hashlib.sha256(f"{run_id}/{turn}/{limit_usd:.9f}".encode()).hexdigest()[:16]


class SpendChecks(ActivityBase):
    def token_cap(self, run_id: str) -> str:
        """Why the run may not call its model again (its token cap is reached), from the ledger;
        "" while it may. Its subagents' tokens count in it, as they always counted in its usage
        (README, Subagents); a subagent's cap counts its own (and its subagents')."""
        cap = self.spec(run_id).caps.max_tokens
        used = self.ledger_tokens(run_id)
        return f"token cap reached ({used} of {cap} tokens)" if used >= cap else ""

    def budget_check(self, run_id: str, turn: int) -> BudgetCheck | None:
        """The family's spend against its budget (None: the run has no `--max-cost`)."""
        if self.spec(run_id).caps.max_cost is None:
            return None
        family = self.store.family_spend(run_id)
        root = self.spec(family.root_run_id)
        if root.caps.max_cost is None:
            return None
        limit = root.caps.max_cost + float(family.raised)
        spent = float(family.dollars)
        model = self.spec(run_id).model
        if family.unpriced or self.deps.prices.price(model) is None:
            return BudgetCheck(spent_usd=spent, limit_usd=limit, root_run_id=family.root_run_id, refusal=(
                f"model {model} has no price, so the budget of ${limit:,.2f} cannot be held: add its price to the "
                "file LONGRUN_PRICES names on the workers (docs/CONFIGURATION.md), or start the run without --max-cost"))
        reached = spent >= limit
        return BudgetCheck(spent_usd=spent, limit_usd=limit, root_run_id=family.root_run_id, reached=reached,
                           warn=spent >= WARN_AT * limit,
                           request_id=budget_request_id(run_id, turn, limit) if reached else "")


class BudgetActivities(DecisionActivities):
    @implements(Activities.decide_budget)
    def decide_budget(self, inp: BudgetDecisionInput) -> None:
        """Verify a signed raise (or rejection) of a budget request; record the raise in the
        ledger and the decision in the audit. Idempotent per request."""
        record = self._verified(inp.run_id, inp.proof, inp.approver, inp.request_id)
        by_cents = round(inp.by_usd * 100)
        why = ""
        if not isinstance(record, BudgetRecord):
            why = "the record is not a signed budget decision: sign it with `longrun raise-budget`"
        elif record.request_id != inp.request_id or record.decision != inp.decision:
            why = f"the record is a {record.decision} of {record.request_id}, not a {inp.decision} of {inp.request_id}"
        elif record.by_cents != by_cents or record.reason != inp.reason:
            why = "the record names another amount, or another reason, than the update carries"
        elif inp.decision == "raise" and by_cents <= 0:
            why = "a raise must be of at least $0.01"
        if why:
            self._refuse(inp.run_id, inp.request_id, inp.approver, why)
            raise ProofRefused(why)
        if inp.decision == "raise":
            self.store.record_budget_raise(inp.run_id, request_id=inp.request_id, by_usd=by_cents / 100,
                                           approver=inp.approver, reason=inp.reason)
        self.audit(inp.run_id, BudgetDecided(request_id=inp.request_id, approver=inp.approver, decision=inp.decision,
                                             by_usd=by_cents / 100, reason=inp.reason, proof=inp.proof),
                   actor=f"human:{inp.approver}")


__all__ = ["WARN_AT", "BudgetActivities", "SpendChecks", "budget_request_id"]
