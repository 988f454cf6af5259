"""The JSON API (docs/API.md). Reads need any role; decisions need `approver` (and a place in the
run's approvers); steering needs `operator`; every mutation needs the CSRF token. Errors are
`{"error": message}` with a status that says what kind (401 sign in, 403 not allowed, 404 no such
thing, 409 the run refused, 422 a field is wrong, 503 Temporal does not answer).

A refused decision or operator request of a signed-in person is written into the run's audit
(`approval_refused`, `operator_request` with outcome `refused`) before the error is returned, at
most ten a minute per person (`throttle.RefusalBudget`); a decision about an approval the run never
asked for is refused with 404 and audits nothing, since its id is only the caller's text.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any, Literal

from fastapi import APIRouter, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field
from sse_starlette.sse import EventSourceResponse

from longrun.auth.audit_check import verify_decisions
from longrun.auth.keys import Signer
from longrun.client import calls, decide
from longrun.client import runs as client_runs
from longrun.client.approval_view import approval_view
from longrun.client.status import pending_from_audit
from longrun.console import views
from longrun.console.auth import Me, Principal, check_csrf, check_origin, client_address, login, logout, signer
from longrun.console.context import Console
from longrun.console.errors import Conflict, Forbidden, NotFound
from longrun.console.session_cookie import clear_cookie, set_cookie
from longrun.errors import ApprovalError, ApprovalNotFound, ArtifactPruned, RunNotFoundError
from longrun.models.audit import (
    ApprovalGranted,
    ApprovalRejected,
    ApprovalRequested,
    OperatorRequest,
    RunFinished,
    ScopeEnded,
    ScopeGranted,
)
from longrun.models.run import RunStatus
from longrun.store import AuditRecord, InvalidInputError
from longrun.store.records import RunRecord
from longrun.views_common import describe_event

router = APIRouter(prefix="/api")


def console_of(request: Request) -> Console:
    c: Console = request.app.state.console
    return c


async def _run(c: Console, run_id: str) -> RunRecord:
    try:
        return await asyncio.to_thread(c.store.get_run, run_id)
    except RunNotFoundError as exc:
        raise NotFound(f"no run {run_id!r}: GET /api/runs lists them") from exc


class SessionIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=100)
    password: str = Field(min_length=1, max_length=1000)


class ApproveIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    edit: dict[str, Any] | None = Field(default=None, description="arguments to change before approving")
    ttl_seconds: int | None = Field(default=None, ge=1, le=86_400)


class RejectIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    reason: str = Field(min_length=1, max_length=2_000, description="what the model is told")


class SayIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str = Field(min_length=1, max_length=20_000)
    constraint: bool = False


def me_view(p: Principal) -> dict[str, Any]:
    return {"principal": p.name, "roles": list(p.roles), "key_id": p.key_id, "csrf_token": p.csrf}


@router.post("/session", summary="sign in (sets the session cookie)")
async def create_session(body: SessionIn, request: Request, response: Response) -> dict[str, Any]:
    check_origin(request)
    c = console_of(request)
    token, p = await login(c, body.name, body.password, client_address(request))
    set_cookie(response, c, token, request)
    return me_view(p)


@router.delete("/session", summary="sign out")
async def end_session(request: Request, response: Response, p: Me) -> dict[str, Any]:
    check_csrf(request, p)
    await logout(console_of(request), p)
    clear_cookie(response)
    return {"signed_out": p.name}


@router.get("/me")
async def me(p: Me) -> dict[str, Any]:
    return me_view(p)


@router.get("/runs", summary="runs, newest first")
async def runs(request: Request, p: Me,
               status: str | None = Query(default=None, description="only runs with this status"),
               waiting: bool | None = Query(default=None, description="only runs waiting (or not) for an approval"),
               limit: int = Query(default=50, ge=1, le=500)) -> dict[str, Any]:
    rows = await asyncio.to_thread(views.list_runs, console_of(request), status=status, waiting=waiting, limit=limit)
    return {"runs": rows}


@router.get("/runs/{run_id}", summary="a run: state, status, usage, pending approval, scopes")
async def run(run_id: str, request: Request, p: Me) -> dict[str, Any]:
    c = console_of(request)
    await _run(c, run_id)
    return await asyncio.to_thread(views.run_detail, c, run_id, p)


@router.get("/runs/{run_id}/timeline", summary="audit events, paged")
async def timeline(run_id: str, request: Request, p: Me,
                   after: int = Query(default=0, ge=0, description="events numbered after this"),
                   limit: int = Query(default=100, ge=1, le=1000)) -> dict[str, Any]:
    c = console_of(request)
    await _run(c, run_id)
    return await asyncio.to_thread(views.timeline, c.store, run_id, after=after, limit=limit)


@router.get("/runs/{run_id}/facts", summary="the run's fact store, and which current facts the last compaction left out")
async def facts(run_id: str, request: Request, p: Me,
                kind: Literal["rule", "decision", "value", "status", "preference"] | None = Query(default=None),
                subject: str = Query(default="", max_length=500,
                                     description="only facts whose subject, value or text hold every one of these words"),
                everything: bool = Query(default=False, alias="all",
                                         description="include superseded facts, marked with what replaced them"),
                ) -> dict[str, Any]:
    c = console_of(request)
    await _run(c, run_id)
    return await asyncio.to_thread(views.facts_listing, c, run_id, kind=kind, subject=subject, everything=everything)


@router.get("/runs/{run_id}/approvals/{approval_id}", summary="one approval request, whole, with its diff")
async def approval(run_id: str, approval_id: str, request: Request, p: Me) -> dict[str, Any]:
    c = console_of(request)
    run = await _run(c, run_id)
    try:
        view = await asyncio.to_thread(approval_view, c.store, run_id, approval_id)
    except ApprovalNotFound as exc:
        raise NotFound(str(exc)) from exc
    return {**view.as_dict(), "can_decide": views.can_decide(p, run) and view.decision == "pending"}


@router.get("/approvals", summary="pending approvals the principal may decide")
async def approvals(request: Request, p: Me,
                    all: bool = Query(default=False, description="every pending approval, each saying whether you may "
                                                                 "decide it")) -> dict[str, Any]:
    items = await asyncio.to_thread(views.pending_approvals, console_of(request), p, everything=all)
    return {"approvals": items}


async def _signer(c: Console, p: Principal) -> Signer:
    return await asyncio.to_thread(signer, c, p)


async def _refuse_decision(c: Console, run_id: str, approval_id: str, p: Principal, why: str) -> None:
    """Audit a refused decision, within the person's budget of audited refusals (`throttle`)."""
    if c.refusals.allow(p.name):
        await asyncio.to_thread(calls.record_refusal, c.store, run_id, approval_id, p.name, why)


def quoted(text: str, limit: int = 64) -> str:
    """`text` for a message, cut to `limit` characters: what a URL says is not worth more."""
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _approval_state(c: Console, run: RunRecord, approval_id: str) -> Literal["pending", "answered", "unknown"]:
    records = c.audits.records(run.run_id)
    pending = pending_from_audit(records, run.spec.approval_ttl_seconds)
    if pending is not None and pending.approval_id == approval_id:
        return "pending"
    if any(isinstance(r.event, ApprovalRequested) and r.event.approval_id == approval_id for r in records):
        return "answered"
    return "unknown"


async def _decision_allowed(c: Console, run_id: str, approval_id: str, p: Principal) -> None:
    """Raises:
    NotFound: the run never asked for `approval_id` (nothing is audited: the id is the caller's text).
    Conflict: `approval_id` was answered or expired.
    Forbidden: `p` may not decide it (audited as `approval_refused`)."""
    run = await _run(c, run_id)
    state = await asyncio.to_thread(_approval_state, c, run, approval_id)
    if state == "unknown":
        raise NotFound(f"run {run_id} has no approval {quoted(approval_id)}: GET /api/runs/{run_id} shows the "
                       "pending one")
    if state == "answered":
        raise Conflict(f"approval {approval_id} of run {run_id} is no longer pending (answered, or expired): "
                       f"GET /api/runs/{run_id} shows the pending one")
    if not p.can("approver"):
        why = f"{p.name} has roles {', '.join(p.roles)}, not approver: an administrator can add it " \
              f"(`longrun approvers add {p.name} --role approver`)"
        await _refuse_decision(c, run_id, approval_id, p, why)
        raise Forbidden(why)
    if p.name not in run.spec.approvers:
        why = f"{p.name} is not an approver of run {run_id} (its approvers: {', '.join(run.spec.approvers) or 'none'})"
        await _refuse_decision(c, run_id, approval_id, p, why)
        raise Forbidden(why)


@router.post("/runs/{run_id}/approvals/{approval_id}/approve", summary="approve, signed with your console key")
async def approve(run_id: str, approval_id: str, body: ApproveIn, request: Request,
                  p: Me) -> dict[str, Any]:
    check_csrf(request, p)
    c = console_of(request)
    await _decision_allowed(c, run_id, approval_id, p)
    try:
        answer = await decide.approve(await c.client(), run_id, approval_id, await _signer(c, p), body.ttl_seconds,
                                      store=c.store, edit=body.edit)
    except ApprovalError as exc:
        raise Conflict(f"approval refused: {exc}") from exc
    return {"run_id": run_id, "approval_id": approval_id, "decision": "approve", "by": p.name, "result": answer,
            "edited": body.edit is not None}


@router.post("/runs/{run_id}/approvals/{approval_id}/reject", summary="reject with a reason the model receives")
async def reject(run_id: str, approval_id: str, body: RejectIn, request: Request,
                 p: Me) -> dict[str, Any]:
    check_csrf(request, p)
    c = console_of(request)
    await _decision_allowed(c, run_id, approval_id, p)
    try:
        answer = await decide.reject(await c.client(), run_id, approval_id, await _signer(c, p), body.reason,
                                     store=c.store)
    except ApprovalError as exc:
        raise Conflict(f"rejection refused: {exc}") from exc
    return {"run_id": run_id, "approval_id": approval_id, "decision": "reject", "by": p.name, "result": answer}


Action = Literal["pause", "resume", "cancel", "say", "compact_now"]


async def _operate(request: Request, p: Principal, run_id: str, action: Action, say_body: SayIn | None = None) -> Any:
    check_csrf(request, p)
    c = console_of(request)
    await _run(c, run_id)
    actor = f"human:{p.name}"
    if not p.can("operator"):
        why = f"{p.name} has roles {', '.join(p.roles)}, not operator: an administrator can add it " \
              f"(`longrun approvers add {p.name} --role operator`)"
        if c.refusals.allow(p.name):
            await asyncio.to_thread(c.store.append_audit, run_id,
                                    OperatorRequest(principal=p.name, action=action, outcome="refused", reason=why),
                                    actor=actor)
        raise Forbidden(why)
    await asyncio.to_thread(c.store.append_audit, run_id,
                            OperatorRequest(principal=p.name, action=action, outcome="sent"), actor=actor)
    client = await c.client()
    try:
        if say_body is not None:
            return await client_runs.say(client, c.store, run_id, say_body.text, constraint=say_body.constraint)
        if action == "say":
            raise AssertionError("say comes with its text")
        return await calls.control(client, run_id, action)
    except ApprovalError as exc:
        raise Conflict(f"{action} refused: {exc}") from exc


@router.post("/runs/{run_id}/pause")
async def pause(run_id: str, request: Request, p: Me) -> dict[str, Any]:
    return {"run_id": run_id, "action": "pause", "result": await _operate(request, p, run_id, "pause")}


@router.post("/runs/{run_id}/resume")
async def resume(run_id: str, request: Request, p: Me) -> dict[str, Any]:
    return {"run_id": run_id, "action": "resume", "result": await _operate(request, p, run_id, "resume")}


@router.post("/runs/{run_id}/cancel")
async def cancel(run_id: str, request: Request, p: Me) -> dict[str, Any]:
    return {"run_id": run_id, "action": "cancel", "result": await _operate(request, p, run_id, "cancel")}


@router.post("/runs/{run_id}/say", summary="an instruction (or, with constraint, a constraint) for the run")
async def say(run_id: str, body: SayIn, request: Request, p: Me) -> dict[str, Any]:
    return {"run_id": run_id, "action": "say", "result": await _operate(request, p, run_id, "say", body)}


def _ends(r: AuditRecord) -> bool:
    return isinstance(r.event, RunFinished)


@router.get("/runs/{run_id}/events", summary="live audit events (server-sent events)",
            response_class=EventSourceResponse)
async def events(run_id: str, request: Request, p: Me,
                 after: int = Query(default=0, ge=0, description="events numbered after this (or Last-Event-ID)")
                 ) -> EventSourceResponse:
    c = console_of(request)
    run = await _run(c, run_id)
    last = request.headers.get("last-event-id")
    start = int(last) if last and last.isdigit() else after

    async def stream() -> AsyncIterator[bytes]:
        if RunStatus(run.status).finished:  # its log no longer grows: what is after `start`, then the end
            after, ended = start, False
            for _ in range(20):  # a worker before `end_run` marked the row finished before `run_finished`
                while rows := await asyncio.to_thread(c.store.audit_page, run_id, after_seq=after, limit=500):
                    ended = ended or any(_ends(r) for r in rows)
                    yield b"".join(views.sse_frame(r) for r in rows)
                    after = rows[-1].seq
                if ended:  # (a client already past the end waits these two seconds, then gets `end`)
                    break
                await asyncio.sleep(0.1)
        else:
            async for batch in c.feeds.follow(run_id, start, stop=_ends):
                yield b"".join(frame for _, frame in batch)
        yield f"event: end\ndata: {json.dumps({'run_id': run_id})}\n\n".encode()

    return EventSourceResponse(stream(), ping=15, headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})


@router.get("/runs/{run_id}/audit", summary="chain verification and every signed decision with its status")
async def audit(run_id: str, request: Request, p: Me) -> dict[str, Any]:
    c = console_of(request)
    await _run(c, run_id)
    return await asyncio.to_thread(audit_view, c, run_id)


def audit_view(c: Console, run_id: str) -> dict[str, Any]:
    chain = c.store.verify_chain(run_id)
    report = verify_decisions(c.store, run_id)
    bad = {pr.where: pr.reason for pr in report.problems}
    decisions = []
    for r in c.store.audit(run_id):
        e = r.event
        if isinstance(e, (ApprovalGranted, ApprovalRejected, ScopeGranted)) or (
                isinstance(e, ScopeEnded) and e.proof is not None):
            where = f"audit row {r.seq} ({r.kind})"
            proof = getattr(e, "proof", None)
            decisions.append({"seq": r.seq, "kind": r.kind, "at": r.created_at.isoformat(), "actor": r.actor,
                              "text": describe_event(r), "key_id": proof.key_id if proof else None,
                              "verified": where not in bad and proof is not None,
                              "problem": bad.get(where)})
    return {"run_id": run_id, "chain": {"ok": chain.ok, "detail": str(chain)},
            "decisions_ok": report.ok, "decisions_detail": str(report),
            "problems": [{"where": pr.where, "reason": pr.reason} for pr in report.problems], "decisions": decisions}


@router.get("/runs/{run_id}/artifacts/{sha256}", summary="a stored artifact of the run (its bytes)")
async def artifact(run_id: str, sha256: str, request: Request, p: Me) -> Response:
    c = console_of(request)
    await _run(c, run_id)
    try:
        data = await asyncio.to_thread(c.store.get_family_artifact, run_id, sha256)
    except InvalidInputError as exc:
        raise NotFound(f"run {run_id} has no artifact {sha256}: the run page links the ones it has") from exc
    except ArtifactPruned as exc:  # shown, not failed: the tombstone is what is left of the bytes
        data = exc.tombstone.encode()
    return Response(data, media_type="text/plain; charset=utf-8",
                    headers={"Content-Disposition": f'inline; filename="{sha256[:12]}.txt"'})


__all__ = ["audit_view", "console_of", "me_view", "quoted", "router"]
