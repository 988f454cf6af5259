"""Whether the key that signed a standing decision still vouches for it *now*.

A proof is checked when a scope or an approval is granted; that is not enough, because both are
used later (a scope for hours). So at every use, the gate (and the intent that takes the use)
asks again whether the signing key is still active: a revoked or expired key ends what it
granted, at once, whether or not anything has ended the scope in the task state yet. Revoking a
key also ends its scopes in every run (`longrun.client.revocation`), for the record; this check
is what makes a revocation hold in the meantime.

Pure: the caller fetches the credential from Postgres (`Store.credential`) in an activity.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime

from longrun.auth.check import Credential
from longrun.models.state import Approval, Scope

ASK_AGAIN = "`longrun approvers list` shows who has an active key"

KEY_REVOKED = "key_revoked"
KEY_EXPIRED = "key_expired"
"""How a scope's `ended` (and its `scope_ended` audit event) begins when its key stopped vouching."""


def key_refusal(credential: Credential | None, key_id: str, at: datetime) -> str | None:
    """Why the key can no longer vouch for what it signed (None: it is active).

    A revocation counts from the moment it is recorded, whatever the clocks say: `revoked_at` is
    set only when the key is revoked."""
    if credential is None:
        return f"key {key_id}, which is not registered"
    who = f"key {key_id} of {credential.principal}"
    if credential.revoked_at is not None:
        why = f" ({credential.revoked_reason})" if credential.revoked_reason else ""
        return f"{who}, which was revoked at {credential.revoked_at:%Y-%m-%d %H:%M:%S} UTC{why}"
    if credential.expires_at is not None and at >= credential.expires_at:
        return f"{who}, which expired at {credential.expires_at:%Y-%m-%d %H:%M:%S} UTC"
    return None


def scope_refusal(scope: Scope, credential: Credential | None, at: datetime) -> str | None:
    """Why the scope covers nothing more because of its key (None: its key is active)."""
    why = key_refusal(credential, scope.key_id, at)
    if why is None:
        return None
    return (f"scope {scope.id} was granted with {why}: it covers nothing from then on; ask an approver to grant "
            f"it again with an active key ({ASK_AGAIN})")


def approval_refusal(approval: Approval, credential: Credential | None, at: datetime) -> str | None:
    """Why the approval is never used because of its key (None: its key is active, or the
    approval predates signed decisions and names no key)."""
    if approval.key_id is None:
        return None
    why = key_refusal(credential, approval.key_id, at)
    if why is None:
        return None
    return (f"the approval {approval.id} was signed with {why}: it is never used; propose the action again and ask "
            f"an approver with an active key to approve it ({ASK_AGAIN})")


def ended_by_keys(scopes: Iterable[Scope], credential_of: Callable[[str], Credential | None],
                  at: datetime) -> dict[str, str]:
    """For every scope still in force whose key no longer vouches: its id and what its `ended`
    says (`key_revoked: ...` or `key_expired: ...`)."""
    out: dict[str, str] = {}
    for scope in scopes:
        if scope.ended:
            continue
        credential = credential_of(scope.key_id)
        why = key_refusal(credential, scope.key_id, at)
        if why is not None:
            code = KEY_EXPIRED if credential is not None and credential.revoked_at is None else KEY_REVOKED
            out[scope.id] = f"{code}: {why.replace(', which', '')}"[:500]
    return out


__all__ = ["ASK_AGAIN", "KEY_EXPIRED", "KEY_REVOKED", "approval_refusal", "ended_by_keys", "key_refusal",
           "scope_refusal"]
