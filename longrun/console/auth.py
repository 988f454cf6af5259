"""Signing in, sessions, roles and CSRF.

How a person signs in (docs/API.md, "Authentication"):

1. An administrator gives the principal a console password: `longrun approvers add NAME
   --console`. That makes a *console key*, an Ed25519 pair whose public half is an ordinary
   credential of NAME and whose private half is sealed under the password (`auth.sealed`).
2. `POST /login` (or `POST /api/session`) with name and password opens the seal, checks the key's
   credential is active, and starts a session: a random 256-bit token goes to the browser as an
   HttpOnly, SameSite=Strict cookie, and Postgres keeps only its SHA-256 and the key sealed again
   under the token.
3. Each request finds the session by the token's hash and re-reads the credential and the
   principal's roles, so a revoked key or a removed role takes effect at once.
4. A decision is signed with the session's key, opened from the seal for that one request, and
   verified by the worker exactly like a CLI decision; the audit keeps the record and signature.

Roles: any role may read (`viewer` reads only); `approver` decides approvals (and must be one of
the run's approvers); `operator` pauses, resumes, cancels and steers. Every mutating request needs
the CSRF token (`X-CSRF-Token`, or the form field `csrf`), which is derived from the session token
and served in each page; a request whose Origin is another site is refused as well.
"""

from __future__ import annotations

import asyncio
import hmac
import secrets
import time
from collections import defaultdict, deque
from dataclasses import dataclass
from datetime import timedelta
from typing import Annotated

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
from longrun.console.errors import Forbidden, Unauthenticated
from longrun.models import utcnow
from longrun.store.principals import NAME_RE

COOKIE = "longrun_session"
CSRF_HEADER = "x-csrf-token"
MAX_FAILURES, FAILURE_WINDOW = 5, 300.0
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


class Failures:
    """Failed sign-ins per name in the last five minutes: after five, the name must wait, so a
    password cannot be guessed at the console's speed."""

    def __init__(self) -> None:
        self._seen: dict[str, deque[float]] = defaultdict(deque)

    def check(self, name: str) -> None:
        times = self._seen[name]
        now = time.monotonic()
        while times and now - times[0] > FAILURE_WINDOW:
            times.popleft()
        if len(times) >= MAX_FAILURES:
            wait = int(FAILURE_WINDOW - (now - times[0])) + 1
            raise Unauthenticated(f"too many failed sign-ins for {name}: wait {wait} s and try again")

    def add(self, name: str) -> None:
        self._seen[name].append(time.monotonic())

    def clear(self, name: str) -> None:
        self._seen.pop(name, None)


FAILURES = Failures()


def _login(console: Console, name: str, password: str) -> tuple[str, Principal]:
    store = console.store
    if not NAME_RE.fullmatch(name or ""):
        raise Unauthenticated(f"sign-in refused: {LOGIN_HINT}")
    FAILURES.check(name)
    found = store.console_key(name)
    key_id, seal = found if found is not None else ("0" * 32, _DUMMY)
    key = open_with_password(seal, password, principal=name, key_id=key_id)  # the same work either way
    credential = store.credential(key_id) if key is not None else None
    if key is None or credential is None or credential.status_at(utcnow()) != "active":
        FAILURES.add(name)
        raise Unauthenticated(f"sign-in refused: {LOGIN_HINT}")
    FAILURES.clear(name)
    token = secrets.token_urlsafe(32)
    nonce, sealed = seal_for_session(key, token, principal=name, key_id=key_id)
    store.create_console_session(token_sha256(token), name, key_id, nonce, sealed,
                                 utcnow() + timedelta(hours=console.session_hours))
    return token, Principal(name, credential.roles, key_id, token)


async def login(console: Console, name: str, password: str) -> tuple[str, Principal]:
    """A new session for `name`, if the password opens their console key.

    Raises:
        Unauthenticated: wrong name or password (one message for both), a revoked key, or too many
            failures."""
    return await asyncio.to_thread(_login, console, name, password)


def _authenticate(console: Console, token: str) -> Principal | None:
    found = console.store.console_principal(token_sha256(token))
    if found is None:
        return None
    name, key_id, roles = found
    return Principal(name, roles, key_id, token)


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


__all__ = ["COOKIE", "CSRF_HEADER", "Me", "Principal", "check_csrf", "current", "login", "logout", "signer"]
