"""The console's key store and its sessions (migration 0006).

Rules:

- a console key is written only with the schema owner's URL (`longrun approvers add NAME
  --console`), together with its credential, and never changed: a new password is a new key, and
  the old console keys of that principal are revoked in the same transaction;
- a session row holds the token's SHA-256, the key sealed under the token and a MAC under the
  console's own key (migration 0007: the console checks it, this module only stores it); ending a
  session deletes its row (so no one with the app role can bring it back by clearing a stamp),
  and rows past their expiry are deleted by the console as it goes;
- a sign-in attempt is recorded (`record_sign_in`) before its password is tried, under a
  transaction-scoped advisory lock that serializes the count and the insert, so concurrent
  attempts cannot all pass the throttle; the limits are counted per (client, name), per client and
  in all, over every console process;
- the console reads a principal's roles and the credential's status on every request (through
  `credential`), so a revoked key or a removed role takes effect at once.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

import psycopg
from sqlalchemy import delete, insert, select, text, update
from sqlalchemy.orm import Session

from longrun.auth.sealed import PasswordSeal
from longrun.errors import RunNotFoundError
from longrun.models import utcnow
from longrun.store.core import InvalidInputError, StoreCore, fetch_one
from longrun.store.tables import (
    ConsoleKeyRow,
    ConsoleSessionRow,
    ConsoleSignInRow,
    CredentialRow,
    PrincipalRow,
    core_table,
)

CONSOLE_KEY_REASON = "console password changed"

_PRINCIPAL_SQL = """
SELECT s.principal, s.key_id, p.roles, s.mac, s.created_at, s.expires_at
FROM console_sessions s
JOIN credentials c ON c.key_id = s.key_id AND c.principal = s.principal
JOIN principals p ON p.name = s.principal
WHERE s.token_sha256 = %(token)s AND s.ended_at IS NULL AND s.expires_at > now()
  AND c.created_at <= now() AND c.revoked_at IS NULL AND (c.expires_at IS NULL OR c.expires_at > now())
"""
"""Who a session is, if it and its key are both in force: one statement, on every request."""

_SIGN_IN_LOCK = 0x6C6F6E6772756E01
"""The advisory lock that serializes sign-in bookkeeping (held for one short transaction)."""
_SIGN_INS_KEPT = 86_400.0
"""Attempts older than this (seconds) are deleted as new ones come."""
_SCOPES = {"pair": "client = :client AND principal = :principal", "client": "client = :client", "all": "true"}


@dataclass(frozen=True)
class SignInLimit:
    """At most `attempts` failed sign-ins in `window` seconds, counted per `scope`: the same
    client address and name (`pair`), the same client address (`client`), or all (`all`)."""

    scope: Literal["pair", "client", "all"]
    attempts: int
    window: float


@dataclass(frozen=True)
class SignInRefused:
    """Why an attempt was not recorded: the limit it hit and how long until it has room."""

    limit: SignInLimit
    wait_seconds: int


@dataclass(frozen=True)
class SessionPrincipal:
    """A session row joined with its principal's roles: what the console checks on every request."""

    principal: str
    key_id: str
    roles: tuple[str, ...]
    mac: str | None
    created_at: datetime
    expires_at: datetime


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
                               created_at: datetime, expires_at: datetime, mac: str) -> None:
        """Store a session (and delete expired ones). `mac` covers the token hash, principal, key id,
        `created_at` and `expires_at`, which are stored exactly as given."""

        def tx(s: Session) -> None:
            s.execute(delete(core_table(ConsoleSessionRow)).where(ConsoleSessionRow.expires_at < utcnow()))
            s.execute(insert(core_table(ConsoleSessionRow)).values(
                token_sha256=token_sha256, principal=principal, key_id=key_id, nonce=nonce, sealed_key=sealed,
                created_at=created_at, expires_at=expires_at, mac=mac))

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

    def console_principal(self, token_sha256: str) -> SessionPrincipal | None:
        """The session with that token hash and its principal's roles, if the session has not
        ended or expired and its key is active (registered, not revoked, not expired); else None.
        The caller checks the row's MAC."""

        def read(c: psycopg.Connection) -> SessionPrincipal | None:
            row = fetch_one(c, _PRINCIPAL_SQL, {"token": token_sha256})
            return None if row is None else SessionPrincipal(row.principal, row.key_id, tuple(row.roles), row.mac,
                                                             row.created_at, row.expires_at)

        return self._autocommit("console_principal", read)

    def end_console_session(self, token_sha256: str) -> None:
        """Delete the session's row: an ended session cannot be revived by clearing a stamp."""

        def tx(s: Session) -> None:
            s.execute(delete(core_table(ConsoleSessionRow)).where(ConsoleSessionRow.token_sha256 == token_sha256))

        self._tx("end_console_session", tx)

    def record_sign_in(self, client: str, principal: str, limits: Sequence[SignInLimit]) -> SignInRefused | None:
        """Record a sign-in attempt before its password is tried, unless a limit is reached.

        The count and the insert run under one advisory lock, so of many concurrent attempts at
        most `attempts` of a limit are recorded. An attempt counts as failed until
        `clear_sign_ins` removes it.

        Returns:
            None if recorded; else the first limit reached and how long until it has room."""

        def tx(s: Session) -> SignInRefused | None:
            s.execute(text("SELECT pg_advisory_xact_lock(:lock)"), {"lock": _SIGN_IN_LOCK})
            s.execute(text("DELETE FROM console_sign_ins WHERE at < now() - make_interval(secs => :kept)"),
                      {"kept": _SIGN_INS_KEPT})
            for limit in limits:
                count, wait = s.execute(text(
                    f"SELECT count(*), extract(epoch FROM min(at) + make_interval(secs => :window) - now()) "
                    f"FROM console_sign_ins WHERE {_SCOPES[limit.scope]} "
                    f"AND at > now() - make_interval(secs => :window)"),
                    {"client": client, "principal": principal, "window": limit.window}).one()
                if count >= limit.attempts:
                    return SignInRefused(limit, max(1, int(float(wait or 0)) + 1))
            s.execute(insert(core_table(ConsoleSignInRow)).values(
                attempt_id=secrets.token_hex(16), client=client, principal=principal))
            return None

        return self._tx("record_sign_in", tx)

    def clear_sign_ins(self, client: str, principal: str) -> None:
        """Forget the (client, name) attempts: that person signed in from there."""

        def tx(s: Session) -> None:
            s.execute(delete(core_table(ConsoleSignInRow)).where(ConsoleSignInRow.client == client,
                                                                   ConsoleSignInRow.principal == principal))

        self._tx("clear_sign_ins", tx)

    def audit_head_seq(self, run_id: str) -> int:
        """The run's highest audit sequence number (0: none yet), where a live feed starts.

        Raises:
            RunNotFoundError: no such run."""

        def read(c: psycopg.Connection) -> int:
            row = fetch_one(c, "SELECT audit_count FROM runs WHERE run_id = %(run_id)s", {"run_id": run_id})
            if row is None:
                raise RunNotFoundError(run_id)
            return int(row.audit_count)

        return self._autocommit("audit_head_seq", read)


__all__ = ["CONSOLE_KEY_REASON", "ConsoleMixin", "ConsoleSession", "SessionPrincipal", "SignInLimit", "SignInRefused"]
