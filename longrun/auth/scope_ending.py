"""Ending scopes in a task state: for one reason, one per scope, or because their signing key no
longer vouches for them.

The worker's activities end scopes (`revoke_scope`, a new constraint, the `signing_keys_revoked`
signal) and so does the client (`longrun approvers revoke` ends a revoked key's scopes in every
run, `longrun.client.revocation`). Both take these functions from here, not from
`longrun.activities.decisions`, so the command does not import the worker's activities, and with
them the Temporal worker, the tools and the context pipeline (tests/test_import_cost.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol

from longrun.auth.check import Credential
from longrun.auth.key_status import ended_by_keys
from longrun.models.state import TaskState, utcnow

KEY_OWNER = "owner"
"""Who ends the scopes of a revoked key: the schema owner revoked it (`longrun approvers revoke`)."""

Reapply = Callable[[str, Callable[[TaskState], TaskState], str, str], TaskState]
"""`Store.reapply_on_head`: a compare-and-set of `mutate` on the run's head, re-applied after a lost race."""


class Credentials(Protocol):
    """Where a key's credential is read (`Store`)."""

    def credential(self, key_id: str) -> Credential | None: ...


def end_scopes(state: TaskState, why: str | Mapping[str, str], ids: set[str] | None = None) -> TaskState:
    """The state with the named scopes (default: every one in force) ended for `why` (one
    reason, or one per scope id: then only those scopes end)."""
    if not isinstance(why, str):
        ids = set(why) if ids is None else ids & set(why)
    scopes = [sc.model_copy(update={"ended": (why if isinstance(why, str) else why[sc.id])[:500]})
              if not sc.ended and (ids is None or sc.id in ids) else sc for sc in state.scopes]
    return state.model_copy(update={"scopes": scopes})


def end_scopes_of_inactive_keys(store: Credentials, head: TaskState, reapply: Reapply) -> tuple[TaskState, dict[str, str]]:
    """End, through `reapply` (a compare-and-set re-applied on the head), every scope in force
    whose signing key no longer vouches for it (`longrun.auth.key_status`).

    Returns:
        The state as stored (`head` when nothing had to end) and, per scope it ended, why."""
    if not ended_by_keys(head.scopes, store.credential, utcnow()):
        return head, {}
    ended: dict[str, str] = {}

    def mutate(state: TaskState) -> TaskState:
        ended.clear()  # re-applied after a lost race: what this write ends is what counts
        ended.update(ended_by_keys(state.scopes, store.credential, utcnow()))
        return end_scopes(state, ended)

    new = reapply(head.run_id, mutate, KEY_OWNER, "scopes of a revoked key ended")
    return new, dict(ended)


__all__ = ["KEY_OWNER", "Credentials", "Reapply", "end_scopes", "end_scopes_of_inactive_keys"]
