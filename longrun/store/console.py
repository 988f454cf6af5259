"""The console's key store and its sessions (migration 0006).

Rules:

- a console key is written only with the schema owner's URL (`longrun approvers add NAME
  --console`), together with its credential, and never changed: a new password is a new key, and
  the old console keys of that principal are revoked in the same transaction;
- a session row holds the token's SHA-256 and the key sealed under the token; ending a session
  stamps `ended_at`, and rows past their expiry are deleted by the console as it goes;
- the console reads a principal's roles and the credential's status on every request (through
  `credential`), so a revoked key or a removed role takes effect at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import psycopg
from sqlalchemy import delete, insert, select, update
from sqlalchemy.orm import Session

from longrun.auth.sealed import PasswordSeal
from longrun.models import utcnow
from longrun.store.core import InvalidInputError, StoreCore, _fetch_one
from longrun.store.tables import ConsoleKeyRow, ConsoleSessionRow, CredentialRow, PrincipalRow, core_table

CONSOLE_KEY_REASON = "console password changed"

_PRINCIPAL_SQL = """
SELECT s.principal, s.key_id, p.roles
FROM console_sessions s
JOIN credentials c ON c.key_id = s.key_id AND c.principal = s.principal
JOIN principals p ON p.name = s.principal
WHERE s.token_sha256 = %(token)s AND s.ended_at IS NULL AND s.expires_at > now()
  AND c.created_at <= now() AND c.revoked_at IS NULL AND (c.expires_at IS NULL OR c.expires_at > now())
"""
"""Who a session is, if it and its key are both in force: one statement, on every request."""


@dataclass(frozen=True)
class ConsoleSession:
    token_sha256: str
    principal: str
    key_id: str
    nonce: bytes
    sealed_key: bytes
    created_at: datetime
    expires_at: datetime
    ended_at: datetime | None


class ConsoleMixin(StoreCore):
    """Console keys (sealed under a password) and sessions (sealed under a token)."""

    def add_console_key(self, principal: str, key_id: str, public_key_pem: str, seal: PasswordSeal) -> list[str]:
        """Register the console key's public half as a credential and store its sealed private
        half; revoke the principal's earlier console keys.

        Returns:
            The key ids revoked.

        Raises:
            InvalidInputError: no such principal.
        """
        now = utcnow()

        def tx(s: Session) -> list[str]:
            if s.scalar(select(PrincipalRow.name).where(PrincipalRow.name == principal)) is None:
                raise InvalidInputError(f"no principal {principal!r}: `longrun approvers add {principal}` creates it")
            old = [r[0] for r in s.execute(select(ConsoleKeyRow.key_id).where(ConsoleKeyRow.principal == principal))]
            revoked: list[str] = []
            if old:
                done = s.execute(update(core_table(CredentialRow))
                                 .where(CredentialRow.key_id.in_(old), CredentialRow.revoked_at.is_(None))
                                 .values(revoked_at=now, revoked_reason=CONSOLE_KEY_REASON)
                                 .returning(CredentialRow.key_id))
                revoked = sorted(r[0] for r in done)
            s.execute(insert(core_table(CredentialRow)).values(
                key_id=key_id, principal=principal, algorithm="ed25519", public_key=public_key_pem, created_at=now,
                expires_at=None))
            s.execute(insert(core_table(ConsoleKeyRow)).values(
                key_id=key_id, principal=principal, kdf=seal.kdf, salt=seal.salt, nonce=seal.nonce,
                sealed_key=seal.sealed_key, created_at=now))
            return revoked

        return self._tx("add_console_key", tx)

    def console_key(self, principal: str) -> tuple[str, PasswordSeal] | None:
        """The principal's newest console key whose credential is not revoked (None: none)."""

        def tx(s: Session) -> tuple[str, PasswordSeal] | None:
            row = s.execute(
                select(core_table(ConsoleKeyRow))
                .join(CredentialRow, CredentialRow.key_id == ConsoleKeyRow.key_id)
                .where(ConsoleKeyRow.principal == principal, CredentialRow.revoked_at.is_(None))
                .order_by(ConsoleKeyRow.created_at.desc()).limit(1)
            ).one_or_none()
            if row is None:
                return None
            return row.key_id, PasswordSeal(dict(row.kdf), bytes(row.salt), bytes(row.nonce), bytes(row.sealed_key))

        return self._tx("console_key", tx)

    def create_console_session(self, token_sha256: str, principal: str, key_id: str, nonce: bytes, sealed: bytes,
                               expires_at: datetime) -> None:
        def tx(s: Session) -> None:
            s.execute(delete(core_table(ConsoleSessionRow)).where(ConsoleSessionRow.expires_at < utcnow()))
            s.execute(insert(core_table(ConsoleSessionRow)).values(
                token_sha256=token_sha256, principal=principal, key_id=key_id, nonce=nonce, sealed_key=sealed,
                created_at=utcnow(), expires_at=expires_at))

        self._tx("create_console_session", tx)

    def console_session(self, token_sha256: str) -> ConsoleSession | None:
        """The session with that token hash, if it has not ended or expired."""

        def tx(s: Session) -> ConsoleSession | None:
            row = s.execute(select(core_table(ConsoleSessionRow)).where(
                ConsoleSessionRow.token_sha256 == token_sha256, ConsoleSessionRow.ended_at.is_(None),
                ConsoleSessionRow.expires_at > utcnow())).one_or_none()
            if row is None:
                return None
            return ConsoleSession(row.token_sha256, row.principal, row.key_id, bytes(row.nonce), bytes(row.sealed_key),
                                  row.created_at, row.expires_at, row.ended_at)

        return self._tx("console_session", tx)

    def console_principal(self, token_sha256: str) -> tuple[str, str, tuple[str, ...]] | None:
        """(principal, key id, roles) of the session with that token hash, if the session has not
        ended or expired and its key is active (registered, not revoked, not expired); else None."""

        def read(c: psycopg.Connection) -> tuple[str, str, tuple[str, ...]] | None:
            row = _fetch_one(c, _PRINCIPAL_SQL, {"token": token_sha256})
            return None if row is None else (row.principal, row.key_id, tuple(row.roles))

        return self._autocommit("console_principal", read)

    def end_console_session(self, token_sha256: str) -> None:
        def tx(s: Session) -> None:
            s.execute(update(core_table(ConsoleSessionRow)).where(ConsoleSessionRow.token_sha256 == token_sha256)
                      .values(ended_at=utcnow()))

        self._tx("end_console_session", tx)


__all__ = ["CONSOLE_KEY_REASON", "ConsoleMixin", "ConsoleSession"]
