"""A cap on request bodies, before anything reads them.

FastAPI reads a request's body before it asks who sent it, so without a cap anyone could make
the console hold a body of any size in memory (a 400 MiB one grew it by a GiB). Plain ASGI:

- a `Content-Length` over the cap is answered 413 at once, without reading a byte of the body;
- a body without one (chunked) is counted as it arrives, and the first message past the cap
  ends the request with 413 (`BodyTooLarge`, an `HTTPException`, so the app's own handler words
  the answer; if it escapes, this middleware answers).

Bodies are small except an approval's edit, which may carry a whole new file (`write_file`
takes up to 2,000,000 characters), so that one path has a larger cap.
"""

from __future__ import annotations

import json

from fastapi import HTTPException
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

DEFAULT_MAX_BODY = 256 * 1024
"""Bytes: sign-in, reject reasons, `say` (20,000 characters, JSON-escaped) and forms fit."""
EDIT_MAX_BODY = 16 * 2**20
"""Bytes, for `POST .../approve`, whose `edit` may replace a whole file."""


def limit_for(path: str) -> int:
    return EDIT_MAX_BODY if path.startswith("/api/runs/") and path.endswith("/approve") else DEFAULT_MAX_BODY


def _message(limit: int) -> str:
    return f"request body over {limit:,} bytes: send less (an approval's edit may be up to {EDIT_MAX_BODY:,})"


class BodyTooLarge(HTTPException):
    def __init__(self, limit: int) -> None:
        super().__init__(status_code=413, detail=_message(limit))


class BodyLimit:
    """Refuses request bodies over `limit_for(path)` bytes with 413."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = limit_for(str(scope.get("path", "")))
        declared = Headers(scope=scope).get("content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > limit):
            await _refuse(send, limit)
            return
        seen = 0
        started = False

        async def counted_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise BodyTooLarge(limit)
            return message

        async def watched_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counted_receive, watched_send)
        except BodyTooLarge:
            if started:
                raise
            await _refuse(send, limit)


async def _refuse(send: Send, limit: int) -> None:
    body = json.dumps({"error": _message(limit)}).encode()
    await send({"type": "http.response.start", "status": 413,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


__all__ = ["DEFAULT_MAX_BODY", "EDIT_MAX_BODY", "BodyLimit", "BodyTooLarge", "limit_for"]
