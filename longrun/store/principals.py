"""Principals and their public keys, and the argument edits approvers sign.

Rules:

- only the schema owner registers or revokes (migration 0004 gives the app role SELECT only): a
  worker, or anyone holding the everyday database URL, can read who may approve but cannot make
  themselves an approver;
- a credential is never changed or deleted; revoking sets `revoked_at` once (a trigger refuses
  anything else), so an old decision is judged against the key as it was when it was made;
- a principal is never deleted: the audit names them;
- a call edit is stored (redacted, like every text a human gives a run) before the workflow is
  told its id, and is never changed; ids are numbered 1, 2, ... per run under the `runs` row lock.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import psycopg
from sqlalchemy import func, insert, select, text, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.orm import Session

from longrun.auth.check import ROLES, Credential
from longrun.errors import RunNotFoundError
from longrun.models import utcnow
from longrun.store.core import InvalidInputError, StoreCore, check_int, check_run_id, check_text, fetch_one
from longrun.store.tables import ACTOR_MAX, CallEditRow, CredentialRow, PrincipalRow, RunRow, core_table

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,99}$")


def check_principal_name(name: Any) -> str:
    """Raises:
    InvalidInputError: not 1-100 letters, digits, `.`, `_`, `@` or `-` (starting with a letter or digit)."""
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise InvalidInputError(f"principal name {name!r}: use 1-100 letters, digits, '.', '_', '@' or '-', "
                                "starting with a letter or digit")
    return name


_CREDENTIAL_SQL = (
    "SELECT c.key_id, c.principal, c.public_key, c.created_at, c.expires_at, c.revoked_at, c.revoked_reason, "
    "p.roles FROM credentials c JOIN principals p ON p.name = c.principal WHERE c.key_id = %(key_id)s"
)


def _credential(row: Any, roles: Sequence[str]) -> Credential:
    return Credential(key_id=row.key_id, principal=row.principal, public_key_pem=row.public_key,
                      created_at=row.created_at, expires_at=row.expires_at, revoked_at=row.revoked_at,
                      revoked_reason=row.revoked_reason, roles=tuple(roles))


class PrincipalsMixin(StoreCore):
    """Principals, credentials (public keys) and call edits."""

    def add_principal(self, name: str, roles: Sequence[str], *, actor: str) -> bool:
        """Create the principal, or give an existing one these roles (added to its own).

        Returns:
            True when the principal is new.

        Raises:
            InvalidInputError: a bad name or an unknown role.
        """
        check_principal_name(name)
        unknown = [r for r in roles if r not in ROLES]
        if unknown or not roles:
            raise InvalidInputError(f"roles {list(roles)!r}: choose from {', '.join(ROLES)}")
        check_text("actor", actor, ACTOR_MAX, nonempty=True)

        def tx(s: Session) -> bool:
            row = s.execute(select(PrincipalRow.roles).where(PrincipalRow.name == name).with_for_update()).one_or_none()
            if row is None:
                s.execute(insert(core_table(PrincipalRow)).values(name=name, roles=sorted(set(roles)), created_by=actor,
                                                                  created_at=utcnow()))
                return True
            merged = sorted(set(row.roles) | set(roles))
            if merged != sorted(row.roles):
                s.execute(update(core_table(PrincipalRow)).where(PrincipalRow.name == name).values(roles=merged))
            return False

        return self._tx("add_principal", tx)

    def add_credential(self, principal: str, key_id: str, public_key_pem: str, *, expires_at: datetime | None) -> None:
        """Register a public key for an existing principal.

        Raises:
            InvalidInputError: no such principal, or the key is registered already.
        """
        check_principal_name(principal)

        def tx(s: Session) -> None:
            if s.scalar(select(PrincipalRow.name).where(PrincipalRow.name == principal)) is None:
                raise InvalidInputError(f"no principal {principal!r}: `longrun approvers add {principal}` creates it")
            stmt = pg_insert(core_table(CredentialRow)).values(
                key_id=key_id, principal=principal, algorithm="ed25519", public_key=public_key_pem,
                created_at=utcnow(), expires_at=expires_at).on_conflict_do_nothing().returning(CredentialRow.key_id)
            if s.execute(stmt).first() is None:
                raise InvalidInputError(f"key {key_id} is registered already")

        self._tx("add_credential", tx)

    def revoke_credentials(self, principal: str, *, key_id: str | None = None, reason: str = "") -> list[str]:
        """Revoke the principal's active keys (or the one named), now.

        Returns:
            The key ids revoked (empty: nothing was active).

        Raises:
            InvalidInputError: no such principal, or `key_id` is not one of its keys.
        """
        check_principal_name(principal)
        check_text("reason", reason, 2_000)
        now = utcnow()

        def tx(s: Session) -> list[str]:
            if s.scalar(select(PrincipalRow.name).where(PrincipalRow.name == principal)) is None:
                raise InvalidInputError(f"no principal {principal!r} (`longrun approvers list` shows them)")
            cond = [CredentialRow.principal == principal, CredentialRow.revoked_at.is_(None)]
            if key_id is not None:
                if s.scalar(select(CredentialRow.key_id).where(CredentialRow.principal == principal,
                                                               CredentialRow.key_id == key_id)) is None:
                    raise InvalidInputError(f"{principal} has no key {key_id}")
                cond.append(CredentialRow.key_id == key_id)
            done = s.execute(update(core_table(CredentialRow)).where(*cond)
                             .values(revoked_at=now, revoked_reason=reason).returning(CredentialRow.key_id))
            return sorted(r[0] for r in done)

        return self._tx("revoke_credentials", tx)

    def credential(self, key_id: str) -> Credential | None:
        """The credential registered under `key_id`, with its principal's roles (None: none)."""
        if not isinstance(key_id, str) or not re.fullmatch(r"[0-9a-f]{32}", key_id):
            return None

        def read(c: psycopg.Connection) -> Credential | None:
            # one statement in autocommit: the gate and the intent ask at every use of a decision
            row = fetch_one(c, _CREDENTIAL_SQL, {"key_id": key_id})
            return None if row is None else _credential(row, row.roles)

        return self._autocommit("credential", read)

    def principals(self) -> list[tuple[str, tuple[str, ...], datetime, list[Credential]]]:
        """Every principal: name, roles, created, and its credentials (oldest first)."""

        def tx(s: Session) -> list[tuple[str, tuple[str, ...], datetime, list[Credential]]]:
            people = s.execute(select(core_table(PrincipalRow)).order_by(PrincipalRow.name)).all()
            keys = s.execute(select(core_table(CredentialRow)).order_by(CredentialRow.created_at)).all()
            return [(p.name, tuple(p.roles), p.created_at,
                     [_credential(k, p.roles) for k in keys if k.principal == p.name]) for p in people]

        return self._tx("principals", tx)

    def approver_problems(self, names: Sequence[str]) -> list[str]:
        """Why each of `names` cannot approve now (no such principal, not an approver, no active
        key); empty when all of them can."""
        listed = {name: (roles, creds) for name, roles, _at, creds in self.principals()}
        now = utcnow()
        problems = []
        for name in names:
            if name not in listed:
                problems.append(f"{name!r} is not a principal: `longrun approvers add {name}` creates one with a key")
                continue
            roles, creds = listed[name]
            if "approver" not in roles:
                problems.append(f"{name!r} is not an approver: `longrun approvers add {name} --role approver`")
            elif not any(c.status_at(now) == "active" for c in creds):
                problems.append(f"{name!r} has no active key: `longrun approvers add {name} --new-key` registers one")
        return problems

    def runs_with_open_scopes(self, key_ids: Sequence[str]) -> list[tuple[str, str, list[str]]]:
        """Every run whose head state holds a scope in force signed by one of `key_ids`: its id,
        its status and those scopes' ids (oldest run first). What revoking the keys must end."""
        if not key_ids:
            return []
        query = text("""
            SELECT t.run_id, r.status, array_agg(sc->>'id' ORDER BY sc->>'id') AS scope_ids
            FROM task_states t JOIN runs r ON r.run_id = t.run_id,
                 jsonb_array_elements(coalesce(t.state->'scopes', '[]'::jsonb)) AS sc
            WHERE sc->>'key_id' = ANY(:key_ids) AND coalesce(sc->>'ended', '') = ''
            GROUP BY t.run_id, r.status, r.created_at
            ORDER BY r.created_at, t.run_id""")

        def tx(s: Session) -> list[tuple[str, str, list[str]]]:
            return [(r.run_id, r.status, list(r.scope_ids)) for r in s.execute(query, {"key_ids": list(key_ids)})]

        return self._tx("runs_with_open_scopes", tx)

    # ------------------------------------------------------------------ call edits

    def add_call_edit(self, run_id: str, *, approval_id: str, call_seq: int, call_id: str,
                      arguments: dict[str, Any], action_hash: str, edited_by: str) -> int:
        """Store the arguments an approver wrote for a pending call (redacted); returns the edit id.

        Raises:
            InvalidInputError: bad input (nothing written). RunNotFoundError: no such run.
        """
        check_run_id("run_id", run_id)
        check_int("call_seq", call_seq, minimum=1)
        check_text("approval_id", approval_id, 200, nonempty=True)
        check_text("call_id", call_id, 200, nonempty=True)
        check_text("edited_by", edited_by, ACTOR_MAX, nonempty=True)
        if not isinstance(arguments, dict):
            raise InvalidInputError("arguments: expected a JSON object")
        stored = self.redactor.redact_json(arguments)

        def tx(s: Session) -> int:
            if s.scalar(select(RunRow.run_id).where(RunRow.run_id == run_id).with_for_update()) is None:
                raise RunNotFoundError(run_id)
            newest = s.scalar(select(func.max(CallEditRow.edit_id)).where(CallEditRow.run_id == run_id))
            edit_id = (newest or 0) + 1
            s.execute(insert(core_table(CallEditRow)).values(
                run_id=run_id, edit_id=edit_id, approval_id=approval_id, call_seq=call_seq, call_id=call_id,
                arguments=stored, action_hash=action_hash, edited_by=edited_by, created_at=utcnow()))
            return edit_id

        return self._tx("add_call_edit", tx)

    def call_edit(self, run_id: str, edit_id: int) -> dict[str, Any] | None:
        """An edit as stored: approval_id, call_seq, call_id, arguments, action_hash, edited_by."""

        def tx(s: Session) -> dict[str, Any] | None:
            row = s.execute(select(core_table(CallEditRow)).where(CallEditRow.run_id == run_id,
                                                                  CallEditRow.edit_id == edit_id)).one_or_none()
            return None if row is None else dict(row._mapping)

        return self._tx("call_edit", tx)


__all__ = ["PrincipalsMixin", "check_principal_name"]
