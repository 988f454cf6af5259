"""A signed answer to a run's budget request, from the client side: raise the run family's
budget by a number of dollars, or refuse to (which ends the run).

As for an approval (`longrun.client.decide`): the record (`BudgetRecord`, bound to the run and
the budget request, the amount in cents) is signed with the approver's private key here and
verified by the worker against the registered public key before anything is written. A decision
that cannot be signed or that the workflow or the worker refuses is audited as `approval_refused`
(naming the budget request) and raised as `ApprovalError` saying what to do.
"""

from __future__ import annotations

from pathlib import Path

from temporalio.client import Client

from longrun.client.calls import query_status
from longrun.client.decide import Approver, load_signer, record_base, send_update
from longrun.errors import ApprovalError
from longrun.models.io import BudgetInput
from longrun.models.signed import DEFAULT_LIFETIME_SECONDS, BudgetRecord
from longrun.store import Store
from longrun.workflows.interface import AgentRunInterface


async def decide_budget(
    client: Client, run_id: str, approver: Approver, *, by_usd: float = 0.0, reject: bool = False, reason: str = "",
    store: Store | None = None, key_path: Path | None = None, lifetime_seconds: int = DEFAULT_LIFETIME_SECONDS,
) -> str:
    """Raise the pending budget request's budget by `by_usd` (or, with `reject`, end the run),
    signed with the approver's key.

    Raises:
        ApprovalError: refused (no key, no budget request pending, not an approver, bad
            signature, ...), recorded in the audit when `store` is given.
    """
    live = await query_status(client, run_id)
    pending = live.pending_approval if live is not None else None
    request_id = pending.approval_id if pending is not None and pending.kind == "budget" else ""
    signer = load_signer(store, run_id, request_id or "budget", approver, key_path)
    if not request_id:
        status = live.status if live is not None else "unknown"
        raise ApprovalError(f"run {run_id} is not waiting for a budget raise (status {status}); nothing to decide")
    decision = "reject" if reject else "raise"
    cents = 0 if reject else round(by_usd * 100)
    proof = signer.sign(BudgetRecord(**record_base(signer, run_id, lifetime_seconds), request_id=request_id,
                                     decision=decision, by_cents=cents, reason=reason))
    inp = BudgetInput(request_id=request_id, approver=signer.principal, decision=decision, by_usd=cents / 100,
                      reason=reason, proof=proof)
    return await send_update(client, store, run_id, request_id, signer.principal, AgentRunInterface.raise_budget, inp)


__all__ = ["decide_budget"]
