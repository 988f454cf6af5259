"""The web pages: server-rendered with Jinja2, made live by a little JavaScript (static/console.js)
that follows the run's server-sent events and swaps in fragments the server renders
(`?partial=...`). No build step.

A page asked for without a session redirects to /login and comes back after it.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates

from longrun.client.approval_view import DIFF_TOOLS, approval_view
from longrun.console import views
from longrun.console.api import audit_view, console_of
from longrun.console.auth import Me, Principal, check_csrf, check_origin, client_address, login, logout
from longrun.console.context import Console
from longrun.console.errors import ConsoleError, NotFound
from longrun.console.session_cookie import clear_cookie, set_cookie
from longrun.errors import LongrunError, RunNotFoundError
from longrun.models import utcnow
from longrun.views_common import SCRIPTED_NOTE

router = APIRouter(include_in_schema=False)
templates = Jinja2Templates(directory=str(Path(__file__).parent / "templates"))
TIMELINE_SHOWN = 1000


def _safe_next(target: str | None) -> str:
    """Only a path on this site (never `//host` or a scheme) may be the page after sign-in."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/inbox"
    return target


def page(request: Request, template: str, p: Principal | None, **context: Any) -> HTMLResponse:
    return templates.TemplateResponse(request, template, {"me": p, "scripted_note": SCRIPTED_NOTE, **context})


@router.get("/login")
async def login_page(request: Request, next: str | None = None) -> HTMLResponse:
    return page(request, "login.html", None, next=_safe_next(next))


@router.post("/login")
async def login_form(request: Request, name: str = Form(...), password: str = Form(...),
                     next: str = Form("/inbox")) -> Response:
    c = console_of(request)
    try:
        check_origin(request)
        token, _ = await login(c, name, password, client_address(request))
    except ConsoleError as exc:
        refused = page(request, "login.html", None, next=_safe_next(next), error=exc.message, name=name)
        refused.status_code = exc.status
        if exc.retry_after is not None:
            refused.headers["Retry-After"] = str(exc.retry_after)
        return refused
    response = RedirectResponse(_safe_next(next), status_code=303)
    set_cookie(response, c, token, request)
    return response


@router.post("/logout")
async def logout_form(request: Request, p: Me, csrf: str = Form("")) -> Response:
    check_csrf(request, p, csrf)
    await logout(console_of(request), p)
    response = RedirectResponse("/login", status_code=303)
    clear_cookie(response)
    return response


@router.get("/")
async def home(p: Me) -> Response:
    return RedirectResponse("/inbox", status_code=303)


def _card(store: Any, item: dict[str, Any]) -> dict[str, Any]:
    """A pending approval with its whole arguments and, for file edits, the diff: a built-in's, or a
    custom effect tool's that declares its path and content arguments."""
    try:
        view = approval_view(store, item["run_id"], item["approval_id"]).as_dict()
    except LongrunError as exc:
        view = {"arguments": item["arguments"], "diff": None, "diff_note": str(exc), "hash_matches": False,
                "runs_code": [], "canonical": ""}
    args = view.get("arguments") or {}
    editable = {k: args[k] for k in ("new", "content") if isinstance(args.get(k), str)} or args
    return {**item, "view": view, "diff_lines": diff_lines(view.get("diff")), "shows_diff": item["tool"] in DIFF_TOOLS or view.get("diff") is not None,
            "edit_example": json.dumps(editable, indent=1, ensure_ascii=False)}


def diff_lines(diff: str | None) -> list[tuple[str, str]]:
    """(css class, line) for each line of a unified diff."""
    out = []
    for line in (diff or "").splitlines():
        cls = ("meta" if line.startswith(("---", "+++", "@@", "\\")) else
               "add" if line.startswith("+") else "del" if line.startswith("-") else "ctx")
        out.append((cls, line))
    return out


def _inbox(c: Console, p: Principal) -> list[dict[str, Any]]:
    return [_card(c.store, i) for i in views.pending_approvals(c, p, everything=True)]


@router.get("/inbox")
async def inbox(request: Request, p: Me, partial: bool = Query(default=False)) -> Response:
    cards = await asyncio.to_thread(_inbox, console_of(request), p)
    return page(request, "_inbox_list.html" if partial else "inbox.html", p, cards=cards, now=utcnow())


@router.get("/runs")
async def runs(request: Request, p: Me, status: str | None = None) -> Response:
    rows = await asyncio.to_thread(views.list_runs, console_of(request), status=status or None)
    return page(request, "runs.html", p, runs=rows, status=status or "")


def _run_page(c: Console, run_id: str, p: Principal, partial: str | None = None) -> dict[str, Any]:
    """What the run page shows; for a fragment (`partial`, which the script asks for as events
    arrive) only what that fragment needs, not the timeline and the chart."""
    store = c.store
    try:
        detail = views.run_detail(c, run_id, p, facts=partial in (None, "facts"))
    except RunNotFoundError as exc:
        raise NotFound(f"no run {run_id!r}: the runs page lists them") from exc
    card = _card(store, detail["pending_approval"]) if detail["pending_approval"] and partial in (None, "approval") \
        else None
    if partial is not None:
        return {"run": detail, "card": card}
    total = detail["audit_events"]
    start = max(0, total - TIMELINE_SHOWN)
    timeline = views.timeline(store, run_id, after=start, limit=TIMELINE_SHOWN)
    return {"run": detail, "card": card, "timeline": timeline["items"], "hidden_events": start,
            "svg": views.context_svg(c, run_id)}


@router.get("/runs/{run_id}")
async def run_page(run_id: str, request: Request, p: Me, partial: str | None = Query(default=None)) -> Response:
    if partial not in (None, "status", "approval", "state", "facts"):
        raise NotFound(f"no fragment {partial!r} of the run page (status, approval, state, facts)")
    data = await asyncio.to_thread(_run_page, console_of(request), run_id, p, partial)
    if partial == "status":
        return page(request, "_run_status.html", p, **data)
    if partial == "approval":
        return page(request, "_approval_slot.html", p, **data)
    if partial == "state":
        return page(request, "_run_state.html", p, **data)
    if partial == "facts":
        return page(request, "_run_facts.html", p, **data)
    return page(request, "run.html", p, **data)


@router.get("/runs/{run_id}/context.svg")
async def context_svg(run_id: str, request: Request, p: Me) -> Response:
    try:
        svg = await asyncio.to_thread(views.context_svg, console_of(request), run_id)
    except RunNotFoundError as exc:
        raise NotFound(f"no run {run_id!r}") from exc
    return Response(svg, media_type="image/svg+xml")


@router.get("/runs/{run_id}/audit")
async def audit_page(run_id: str, request: Request, p: Me) -> Response:
    c = console_of(request)
    try:
        data = await asyncio.to_thread(audit_view, c, run_id)
    except RunNotFoundError as exc:
        raise NotFound(f"no run {run_id!r}") from exc
    return page(request, "audit.html", p, audit=data, run_id=run_id)


def login_redirect(request: Request) -> RedirectResponse:
    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return RedirectResponse(f"/login?next={quote(target)}", status_code=303)


__all__ = ["diff_lines", "login_redirect", "router", "templates"]
