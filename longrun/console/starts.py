"""`POST /api/runs`: start a run over HTTP (docs/API.md, "Starting runs").

The rules of the request are `longrun start`'s (`longrun.client.start_request`), so a run the CLI would
refuse is refused here too. Who may: `operator` (the role that already pauses, cancels and
steers runs), with the CSRF token. Each request carries an `Idempotency-Key`: the key is claimed
in PostgreSQL (`run_requests`, migration 0011) before anything starts, so a retried or concurrent
request with the same key and body gets the first one's run, and one with another body is
refused with 409. A crash between the claim and the start is healed by the retry: it creates the
run if it is missing and starts its workflow, which Temporal refuses to start twice.

The run's `run_started` event names the principal (`human:NAME`). A refused request of a
signed-in person (wrong role, no key, too large, a bad spec, a reused key) is a `refused` row of
`run_requests`, within the person's budget of audited refusals (`throttle.RefusalBudget`).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import re
from typing import Any, NoReturn

from fastapi import APIRouter, Header, Request, Response
from pydantic import ValidationError
from temporalio.exceptions import WorkflowAlreadyStartedError

from longrun.client import runs as api
from longrun.client.start_request import InvalidStart, StartRequest, build_spec
from longrun.console.auth import Me, Principal, check_csrf
from longrun.console.context import Console
from longrun.console.errors import Conflict, ConsoleError, Forbidden
from longrun.errors import ConfigError, RunExistsError, RunNotFoundError
from longrun.models.run import RunStatus
from longrun.models.spec import RunSpec
from longrun.store.tables_requests import KEY_MAX

router = APIRouter(prefix="/api")

START_MAX_BODY = 64 * 1024
"""Bytes of a start request (one over the console's 256 KiB cap is refused before anyone is known)."""
KEY_RE = re.compile(rf"[\x21-\x7e]{{1,{KEY_MAX}}}")


class Invalid(ConsoleError):
    status = 422


async def _refuse(c: Console, p: Principal, exc: ConsoleError) -> NoReturn:
    if c.refusals.allow(p.name):
        await asyncio.to_thread(c.store.record_start_refusal, p.name, f"{exc.status}: {exc.message}")
    raise exc


async def _read(request: Request, limit: int) -> bytes | None:
    """The body, or None when it is over `limit` bytes (then the rest is not read)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        return None
    chunks, seen = [], 0
    async for chunk in request.stream():
        seen += len(chunk)
        if seen > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def request_sha256(body: StartRequest) -> str:
    """The hash that tells a retry from another request: of the parsed body, so spacing, key order
    and spelled-out defaults do not matter."""
    return hashlib.sha256(json.dumps(body.model_dump(mode="json"), sort_keys=True).encode()).hexdigest()


async def _ensure_started(c: Console, run_id: str, body: StartRequest, p: Principal) -> None:
    """Make sure run `run_id` exists and its workflow was started, once (safe to repeat)."""
    client = await c.client()
    try:
        record = await asyncio.to_thread(c.store.get_run, run_id)
    except RunNotFoundError:
        spec = await asyncio.to_thread(_spec, c, body, p)
        try:
            await api.start_run(client, c.store, spec, task_queue=c.settings.task_queue, run_id=run_id,
                                actor=f"human:{p.name}")
            return
        except WorkflowAlreadyStartedError:
            return
        except RunExistsError:
            record = await asyncio.to_thread(c.store.get_run, run_id)  # a concurrent twin created it
    if RunStatus(record.status).finished:
        return
    with contextlib.suppress(WorkflowAlreadyStartedError):  # started already: what we want
        await api.launch(client, run_id, c.settings.task_queue)


def _spec(c: Console, body: StartRequest, p: Principal) -> RunSpec:
    spec = build_spec(body, c.settings, default_approver=p.name)
    problems = c.store.approver_problems(spec.approvers)
    if problems:
        raise InvalidStart("cannot start the run: " + "; ".join(problems))
    return spec


def _reused(key: str, run_id: str | None) -> Conflict:
    return Conflict(f"Idempotency-Key {key!r} was already used for a different request (run {run_id}): send a new "
                    "key for a new run, or repeat the first request unchanged to get its run")


@router.post(
    "/runs", status_code=201, summary="start a run (operator; idempotent by the Idempotency-Key header)",
    description="The body has the options of `longrun start` (docs/API.md). 201 with the new run's id; the same "
                "Idempotency-Key with the same body again answers 200 with the same run and starts nothing; with "
                "another body, 409.",
    openapi_extra={"requestBody": {"required": True, "content": {
        "application/json": {"schema": StartRequest.model_json_schema()}}}},
    responses={200: {"description": "a retry: the run this key started"}, 403: {"description": "not an operator"},
               409: {"description": "the key was used for another request"}, 413: {"description": "body too large"},
               422: {"description": "the request cannot make a run (the message says what to change)"}},
)
async def start(request: Request, response: Response, p: Me,
                idempotency_key: str | None = Header(
                    default=None, alias="Idempotency-Key", max_length=1_000,
                    description=f"your unique name for this request (1-{KEY_MAX} visible ASCII characters, e.g. a "
                                "UUID): a retry with it never starts a second run")) -> dict[str, Any]:
    check_csrf(request, p)
    c: Console = request.app.state.console
    if not p.can("operator"):
        await _refuse(c, p, Forbidden(f"{p.name} has roles {', '.join(p.roles)}, not operator: an administrator can "
                                      f"add it (`longrun approvers add {p.name} --role operator`)"))
    key = idempotency_key or ""
    if not KEY_RE.fullmatch(key):
        await _refuse(c, p, Invalid(f"send an Idempotency-Key header of 1-{KEY_MAX} visible ASCII characters (a new "
                                    "UUID per run), so that a retry never starts a second run"))
    raw = await _read(request, START_MAX_BODY)
    if raw is None:
        await _refuse(c, p, ConsoleError(f"request body over {START_MAX_BODY:,} bytes: a start request is its "
                                         "options, not files; send less", status=413))
    try:
        body = StartRequest.model_validate_json(raw or b"")
    except ValidationError as exc:
        text = "; ".join(f"{'.'.join(str(x) for x in e['loc']) or 'body'}: {e['msg']}" for e in exc.errors())
        await _refuse(c, p, Invalid(f"invalid request: {text} (GET /api/docs shows the fields)"))
    digest = request_sha256(body)
    claim = await asyncio.to_thread(c.store.run_request, p.name, key)
    if claim is None:
        await c.client()  # Temporal must answer before the key is spent (503 otherwise)
        try:
            await asyncio.to_thread(_spec, c, body, p)
        except ConfigError as exc:
            await _refuse(c, p, Invalid(str(exc)))
        proposed = api.new_run_id()
        claim = await asyncio.to_thread(c.store.claim_run_request, p.name, key, digest, proposed)
        response.status_code = 201 if claim.run_id == proposed else 200  # 200: a concurrent twin claimed it first
    else:
        response.status_code = 200
    if claim.request_sha256 != digest:
        await _refuse(c, p, _reused(key, claim.run_id))
    assert claim.run_id is not None  # a started claim has one (check constraint)
    try:
        await _ensure_started(c, claim.run_id, body, p)
    except ConfigError as exc:
        await _refuse(c, p, Invalid(str(exc)))
    return {"run_id": claim.run_id, "created": response.status_code == 201, "by": p.name,
            "status_url": f"/api/runs/{claim.run_id}"}


__all__ = ["START_MAX_BODY", "request_sha256", "router"]
