"""The session cookie: the only secret the browser holds. HttpOnly (no script reads it),
SameSite=Strict (no other site's page sends it), Path=/, and Secure when the console is served
over TLS (or `--secure-cookies` says a TLS proxy is in front)."""

from __future__ import annotations

from fastapi import Request, Response

from longrun.console.auth import COOKIE
from longrun.console.context import Console


def set_cookie(response: Response, console: Console, token: str, request: Request) -> None:
    secure = console.secure_cookies or request.url.scheme == "https"
    response.set_cookie(COOKIE, token, max_age=int(console.session_hours * 3600), path="/", httponly=True,
                        samesite="strict", secure=secure)


def clear_cookie(response: Response) -> None:
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")


__all__ = ["clear_cookie", "set_cookie"]
