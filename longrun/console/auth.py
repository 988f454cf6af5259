"""Signing in, sessions, roles and CSRF.

How a person signs in (docs/API.md, "Authentication"):

1. An administrator gives the principal a console password: `longrun approvers add NAME
   --console`. That makes a *console key*, an Ed25519 pair whose public half is an ordinary
   credential of NAME and whose private half is sealed under the password (`auth.sealed`).
2. `POST /login` (or `POST /api/session`) with name and password opens the seal, checks the key's
   credential is active, and starts a session: a random 256-bit token goes to the browser as an
   HttpOnly, SameSite=Strict cookie, and Postgres keeps only its SHA-256, the key sealed again
   under the token, and a MAC under the console's own key (`session_mac`). Attempts are
   throttled per client address and name, per address and in all (`throttle`).
3. Each request finds the session by the token's hash, checks the row's MAC (a row the app role
   wrote or changed signs no one in) and re-reads the credential and the principal's roles, so a
   revoked key or a removed role takes effect at once.
4. A decision is signed with the session's key, opened from the seal for that one request, and
   verified by the worker exactly like a CLI decision; the audit keeps the record and signature.

Roles: any role may read (`viewer` reads only); `approver` decides approvals (and must be one of
the run's approvers); `operator` starts runs, pauses, resumes, cancels and steers. Every mutating request needs
the CSRF token (`X-CSRF-Token`, or the form field `csrf`), which is derived from the session token
and served in each page; a request whose Origin is another site is refused as well.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Annotated

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from fastapi import Depends, Request

from longrun.auth.keys import Signer
from longrun.auth.sealed import (
    PasswordSeal,
    csrf_token,
    open_for_session,
    open_with_password,
    seal_for_session,
    token_sha256,
)
from longrun.console.context import Console
from longrun.console.errors import Forbidden, TooManyRequests, Unauthenticated
from longrun.console.session_mac import KEY_FILE, SECRET_VARIABLE
from longrun.console.throttle import SIGN_IN_LIMITS, refusal_message
from longrun.models import utcnow
from longrun.store.principals import NAME_RE

log = logging.getLogger("longrun.console")

COOKIE = "longrun_session"
CSRF_HEADER = "x-csrf-token"
_DUMMY = PasswordSeal({"name": "scrypt", "n": 2**15, "r": 8, "p": 1}, b"\0" * 16, b"\0" * 12, b"\0" * 48)
LOGIN_HINT = ("check the name and password; an administrator sets a console password with "
              "`longrun approvers add NAME --console`")


@dataclass(frozen=True)
class Principal:
    """The signed-in person of a request."""

    name: str
    roles: tuple[str, ...]
    key_id: str
    token: str

    @property
    def csrf(self) -> str:
        return csrf_token(self.token)

    def can(self, role: str) -> bool:
        return role in self.roles


def client_address(request: Request) -> str:
    """The request's TCP peer: the console trusts no `X-Forwarded-For` (anyone could send one)."""
    return request.client.host if request.client else "unknown"


async def login(console: Console, name: str, password: str, client: str) -> tuple[str, Principal]:
    """A new session for `name`, if the password opens their console key.

    The attempt is recorded in PostgreSQL before the password is tried (`throttle`), so neither
    concurrency nor a second console process gets more tries past the limits; the key derivation
    runs in the console's small pool of its own, never in the threads that serve reads. `client`
    is the request's TCP peer address.

    Raises:
        Unauthenticated: wrong name or password (one message for both), or a revoked key.
        TooManyRequests: a sign-in limit is reached, or too many sign-ins wait for the pool."""
    store = console.store
    if not NAME_RE.fullmatch(name or ""):
        raise Unauthenticated(f"sign-in refused: {LOGIN_HINT}")
    async with console.derivations.admitted():
        # the bookkeeping runs on the sign-in pool too: a flood never holds the threads reads use
        refused = await console.derivations.run(store.record_sign_in, client, name, SIGN_IN_LIMITS)
        if refused is not None:
            raise TooManyRequests(refusal_message(refused, name, client), retry_after=refused.wait_seconds)
        found = await console.derivations.run(store.console_key, name)
        key_id, seal = found if found is not None else ("0" * 32, _DUMMY)
        key = await console.derivations.run(open_with_password, seal, password, principal=name,
                                            key_id=key_id)  # the same work either way
    credential = await asyncio.to_thread(store.credential, key_id) if key is not None else None
    if key is None or credential is None or credential.status_at(utcnow()) != "active":
        raise Unauthenticated(f"sign-in refused: {LOGIN_HINT}")
    token = secrets.token_urlsafe(32)
    await asyncio.to_thread(_start_session, console, client, name, key_id, key, token)
    return token, Principal(name, credential.roles, key_id, token)


def _start_session(console: Console, client: str, name: str, key_id: str, key: Ed25519PrivateKey,
                   token: str) -> None:
    console.store.clear_sign_ins(client, name)
    nonce, sealed = seal_for_session(key, token, principal=name, key_id=key_id)
    created = utcnow()
    expires = created + timedelta(hours=console.session_hours)
    digest = token_sha256(token)
    console.store.create_console_session(digest, name, key_id, nonce, sealed, created, expires,
                                         console.mac.sign(digest, name, key_id, created, expires))


def _authenticate(console: Console, token: str) -> Principal | None:
    digest = token_sha256(token)
    found = console.store.console_principal(digest)
    if found is None:
        return None
    if not console.mac.check(found.mac, digest, found.principal, found.key_id, found.created_at, found.expires_at):
        if console.mac.other_key(found.mac):
            log.warning("refused a session signed under another console's key: give every console process the "
                        "same %s, or the same $LONGRUN_HOME/%s", SECRET_VARIABLE, KEY_FILE)
        else:
            log.warning("refused a session of %s without a valid MAC (written outside the console, changed, "
                        "or from before migration 0007)", found.principal)
        return None
    return Principal(found.principal, found.roles, found.key_id, token)


async def current(request: Request) -> Principal:
    """The request's principal (a FastAPI dependency).

    Raises:
        Unauthenticated: no cookie, or its session ended, expired, or its key was revoked."""
    token = request.cookies.get(COOKIE)
    console: Console = request.app.state.console
    principal = await asyncio.to_thread(_authenticate, console, token) if token else None
    if principal is None:
        raise Unauthenticated("sign in first: open /login" if not token else
                              "your session has ended (signed out, expired, or the key was revoked): sign in again")
    return principal


async def logout(console: Console, principal: Principal) -> None:
    await asyncio.to_thread(console.store.end_console_session, token_sha256(principal.token))


def check_csrf(request: Request, principal: Principal, form_value: str | None = None) -> None:
    """Raises:
    Forbidden: the CSRF token is missing or wrong, or the request comes from another origin."""
    check_origin(request)
    given = request.headers.get(CSRF_HEADER) or form_value or ""
    if not hmac.compare_digest(given.encode(), principal.csrf.encode()):
        raise Forbidden("missing or wrong CSRF token: reload the page and try again (programs send the "
                        "X-CSRF-Token header that /api/me returns)")


def check_origin(request: Request) -> None:
    """Raises:
    Forbidden: the request names an origin other than this console's (`null` included: what a
        sandboxed frame or a local file sends). Programs that send no Origin are judged by the
        CSRF token alone."""
    origin = request.headers.get("origin")
    if origin and origin.split("://", 1)[-1] != request.headers.get("host", ""):
        raise Forbidden(f"a request from {origin} may not change anything here")


Me = Annotated[Principal, Depends(current)]
"""A route parameter for the signed-in principal (401 without a session)."""


def signer(console: Console, principal: Principal) -> Signer:
    """The principal's console key, opened for one signature.

    Raises:
        Unauthenticated: the session's seal does not open (the session row was tampered with)."""
    session = console.store.console_session(token_sha256(principal.token))
    key = None if session is None else open_for_session(session.nonce, session.sealed_key, principal.token,
                                                         principal=principal.name, key_id=principal.key_id)
    if key is None:
        raise Unauthenticated("your session's key does not open: sign in again")
    return Signer(principal=principal.name, key=key)


__all__ = ["COOKIE", "CSRF_HEADER", "Me", "Principal", "check_csrf", "client_address", "current", "login", "logout",
           "signer"]
