"""The console's ASGI app: `create_app(console)` (FastAPI; the OpenAPI page is at /api/docs).

Errors: a `ConsoleError` becomes `{"error": message}` with its status; a validation error names
each bad field (`{"error": "body.reason: ...", "fields": [...]}`, 422); an error of longrun's
own (`RunNotFoundError`, `StackNotRunning`, ...) is mapped to 404 / 503 / 409. Pages get the same,
except that a missing session redirects to the sign-in page.

Request bodies are capped before they are read (`body_limit`: 413).

Every response carries a strict Content-Security-Policy (scripts and styles from this origin
only, no framing), `nosniff`, and a referrer only to the console itself.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.datastructures import MutableHeaders
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from longrun.console import api, exports, pages, starts
from longrun.console.body_limit import BodyLimit
from longrun.console.context import Console
from longrun.console.errors import ConsoleError, Unauthenticated
from longrun.errors import ApprovalError, LongrunError, RunNotFoundError, StackNotRunning

log = logging.getLogger("longrun.console")

SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
                               "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",  # not "no-referrer": with it a form post says `Origin: null`
    "X-Frame-Options": "DENY",
}


class SecurityHeaders:
    """Adds the security headers (and `no-store` on the API) to every response. Plain ASGI, not
    Starlette's `BaseHTTPMiddleware`, which pipes every body through a memory stream: with 200
    event streams open that doubled the console's work per event."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        api = str(scope.get("path", "")).startswith("/api/")

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for k, v in SECURITY_HEADERS.items():
                    headers.setdefault(k, v)
                if api and "cache-control" not in headers:
                    headers["Cache-Control"] = "no-store"
            await send(message)

        await self.app(scope, receive, with_headers)


def _is_api(request: Request) -> bool:
    return request.url.path.startswith("/api/")


def _error(request: Request, status: int, message: str, retry_after: int | None = None,
           **extra: object) -> Response:
    """The error's response: a page for a page (with the status on the response, not only in the
    text), JSON for the API, a redirect to the sign-in page for a page without a session."""
    if status == 401 and not _is_api(request):
        return pages.login_redirect(request)
    response: Response
    if not _is_api(request) and request.method == "GET":
        response = pages.page(request, "error.html", None, status=status, message=message)
        response.status_code = status
    else:
        response = JSONResponse({"error": message, **extra}, status_code=status)
    if retry_after is not None:
        response.headers["Retry-After"] = str(retry_after)
    return response


def create_app(console: Console) -> FastAPI:
    app = FastAPI(title="longrun console", version="1", docs_url="/api/docs", redoc_url=None,
                  openapi_url="/api/openapi.json",
                  description="The JSON API of the longrun console (docs/API.md). Sign in with POST /api/session; "
                              "send the returned csrf_token as X-CSRF-Token on every POST and DELETE.")
    app.state.console = console
    app.add_middleware(BodyLimit)
    app.add_middleware(SecurityHeaders)  # added last, so outermost: on every answer, 413s included
    app.mount("/static", StaticFiles(directory=str(Path(__file__).parent / "static")), name="static")

    @app.get("/healthz", include_in_schema=False)
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/metrics", include_in_schema=False)
    async def metrics() -> Response:
        """Prometheus counts over every run, without a session: counts only, no names, ids or
        text (docs/OBSERVABILITY.md), read from PostgreSQL at most once per few seconds."""
        body = await asyncio.to_thread(generate_latest, console.metrics)
        return Response(body, media_type=CONTENT_TYPE_LATEST)

    @app.exception_handler(ConsoleError)
    async def console_error(request: Request, exc: ConsoleError) -> Response:
        return _error(request, exc.status, exc.message, exc.retry_after)

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> Response:
        fields = [{"field": ".".join(str(x) for x in e["loc"]), "message": e["msg"]} for e in exc.errors()]
        text = "; ".join(f"{f['field']}: {f['message']}" for f in fields)
        return _error(request, 422, f"invalid request: {text}", fields=fields)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        message = "no such page or endpoint: /api/docs lists the API" if exc.status_code == 404 else str(exc.detail)
        return _error(request, exc.status_code, message)

    @app.exception_handler(LongrunError)
    async def longrun_error(request: Request, exc: LongrunError) -> Response:
        if isinstance(exc, RunNotFoundError):
            return _error(request, 404, f"{exc}: GET /api/runs lists the runs")
        if isinstance(exc, StackNotRunning):
            return _error(request, 503, str(exc))
        if isinstance(exc, ApprovalError):
            return _error(request, 409, str(exc))
        log.warning("console request failed: %s", exc)
        return _error(request, 500, f"{type(exc).__name__}: {exc}")

    app.include_router(api.router)
    app.include_router(starts.router)
    app.include_router(exports.router)
    app.include_router(pages.router)
    return app


__all__ = ["Unauthenticated", "create_app"]
