"""At each use of a standing decision, whether the key that signed it still vouches for it.

The gate and the intent that takes a use ask here (Postgres, now), so a revoked or expired key
stops its scopes and approvals at once, even before anything ends them in the task state. The
wording of each refusal is `longrun.auth.key_status`'s. Tests: tests/test_scopes.py and
tests/test_invariants.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from longrun.auth.key_status import approval_refusal, scope_refusal
from longrun.models.state import Scope, TaskState, utcnow
from longrun.store import Store


@dataclass(frozen=True)
class SigningKeys:
    store: Store

    def scope(self, scope: Scope) -> str | None:
        """Why the scope's key no longer vouches for it (None: it does)."""
        return scope_refusal(scope, self.store.credential(scope.key_id), utcnow())

    def approval(self, state: TaskState, action_hash: str, now: datetime) -> str:
        """Why the approval that would cover this action must not be used ('' when none would,
        or its key still vouches for it)."""
        approval = state.approval_for(action_hash, now)
        if approval is None or approval.key_id is None:
            return ""
        return approval_refusal(approval, self.store.credential(approval.key_id), utcnow()) or ""


__all__ = ["SigningKeys"]
