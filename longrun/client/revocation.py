"""Revoking a key ends what it granted: the scopes it signed, in every run that holds one.

`longrun approvers revoke` records the revocation in Postgres first; from then on the gate
refuses every use of what the key signed (`longrun.auth.key_status`), whatever else happens.
Ending the scopes is the bookkeeping that follows, so that the task state, `status` and the
audit say so: a running run is sent the `signing_keys_revoked` signal, and its worker ends the
scopes through the usual compare-and-set (as `revoke-grant` does through its update), so the
workflow keeps track of its state version; a run that is not running (finished, or gone from
Temporal, or Temporal does not answer) gets them ended here, with the same compare-and-set
and the same `scope_ended` audit event. Tests: tests/test_scopes.py, tests/test_cli_approvals.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from temporalio.client import Client
from temporalio.service import RPCError

from longrun.auth.scope_ending import KEY_OWNER, end_scopes_of_inactive_keys
from longrun.client.calls import run_handle
from longrun.models.audit import AuditEvent, ScopeEnded
from longrun.models.run import RunStatus
from longrun.store import Store
from longrun.workflows.interface import AgentRunInterface


@dataclass(frozen=True)
class RunEnding:
    """What revoking did to one run's scopes."""

    run_id: str
    scope_ids: list[str]
    how: Literal["signalled", "ended"]
    """`signalled`: the running workflow ends them (a moment later); `ended`: ended here."""


async def end_revoked_scopes(client: Client | None, store: Store, key_ids: Sequence[str]) -> list[RunEnding]:
    """End every scope in force signed by one of the (now revoked) `key_ids`, in every run.

    Args:
        client: Temporal (None: it does not answer, so every run's scopes are ended here).
        store: a store that may write task states and audits (the owner's, for `approvers revoke`).
        key_ids: the keys just revoked.
    """
    out: list[RunEnding] = []
    for run_id, status, scope_ids in store.runs_with_open_scopes(key_ids):
        if client is not None and not RunStatus(status).finished:
            try:
                await run_handle(client, run_id).signal(AgentRunInterface.signing_keys_revoked)
            except RPCError:
                pass  # no running workflow to tell (or no answer): end them here
            else:
                out.append(RunEnding(run_id, scope_ids, "signalled"))
                continue
        _new, ended = end_scopes_of_inactive_keys(store, store.load_state(run_id), store.reapply_on_head)
        events: list[tuple[AuditEvent, str]] = [
            (ScopeEnded(scope_id=scope_id, by=KEY_OWNER, reason=why), KEY_OWNER) for scope_id, why in ended.items()]
        store.append_audits(run_id, events)
        out.append(RunEnding(run_id, sorted(ended), "ended"))
    return out


__all__ = ["RunEnding", "end_revoked_scopes"]
