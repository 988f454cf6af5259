"""What the console shows, as plain data: the same dicts feed the JSON API and the templates.

Everything is read from PostgreSQL (the run row, the head state, the audit log), as `longrun
status` does when Temporal no longer has a run, so a page shows the record (the audit log through
`cache.AuditCache`, which only ever appends the rows written since). A run's status counts as
`paused` while its last pause/resume control was a pause or it waits for a human, else as
`waiting_approval` while the audit holds an unanswered request (`status_from_records`).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from longrun import render
from longrun.client.status import pending_from_audit, status_from_records
from longrun.context import list_facts
from longrun.models.audit import (
    ApprovalExpired,
    ApprovalGranted,
    ApprovalRefused,
    ApprovalRejected,
    ApprovalRequested,
    CompactionDone,
    CompactionStarted,
    InstructionDropped,
    ModelCalled,
    OperatorRequest,
    RunControl,
    RunFinished,
    RunRetention,
    RunStarted,
    ScopeEnded,
    ScopeGranted,
    ScopeUsed,
    StateCommitted,
    Steered,
    ToolRan,
)
from longrun.models.run import PendingApproval, RunStatus, RunStatusView
from longrun.providers.pricing import estimate_cost
from longrun.store import AuditRecord, Store
from longrun.store.records import RunRecord
from longrun.store.spend import Spend
from longrun.views_common import context_limits, context_points, describe_event

if TYPE_CHECKING:  # auth needs the console's context, which renders events with this module
    from longrun.console.auth import Principal
    from longrun.console.context import Console


def category(r: AuditRecord) -> str:
    """The timeline's grouping of an event (the run page colours and filters by it)."""
    e = r.event
    if isinstance(e, ModelCalled):
        return "model"
    if isinstance(e, (ApprovalRequested, ApprovalGranted, ApprovalRejected, ApprovalExpired, ApprovalRefused,
                      ScopeGranted, ScopeUsed, ScopeEnded)):
        return "approval"
    if isinstance(e, (CompactionStarted, CompactionDone)):
        return "compaction"
    if isinstance(e, StateCommitted):
        return "state"
    if isinstance(e, (RunControl, OperatorRequest, Steered, InstructionDropped)):
        return "control"
    if isinstance(e, (RunStarted, RunFinished, RunRetention)) or r.kind in ("forked_from", "run_forked"):
        return "run"
    if r.kind.startswith("notification"):
        return "notification"
    if r.kind == "error":
        return "error"
    return "tool"


def event_item(r: AuditRecord) -> dict[str, Any]:
    """One timeline row: what the run page shows and the live feed sends."""
    return {"seq": r.seq, "at": r.created_at.isoformat(), "kind": r.kind, "category": category(r), "actor": r.actor,
            "text": describe_event(r)}


def sse_frame(r: AuditRecord) -> bytes:
    """The server-sent event of one audit record, encoded once for every subscriber."""
    return f"id: {r.seq}\nevent: audit\ndata: {json.dumps(event_item(r))}\n\n".encode()


def pending_view(p: PendingApproval, run: RunRecord, who: Principal | None) -> dict[str, Any]:
    return {"run_id": run.run_id, "approval_id": p.approval_id, "tool": p.tool, "arguments": p.arguments,
            "action_hash": p.action_hash, "state_version": p.state_version,
            "requested_at": p.requested_at.isoformat(), "expires_at": p.expires_at.isoformat(),
            "approvers": list(run.spec.approvers),
            "can_decide": who is not None and can_decide(who, run)}


def can_decide(who: Principal, run: RunRecord) -> bool:
    return who.can("approver") and who.name in run.spec.approvers


def run_row(c: Console, run: RunRecord) -> dict[str, Any]:
    """A run as the list shows it."""
    return _row(run, status_from_records(run, c.store.load_state(run.run_id), c.audits.records(run.run_id)),
                c.store.family_spend(run.run_id))


def _row(run: RunRecord, view: RunStatusView, family: Spend | None = None) -> dict[str, Any]:
    """A run's row. Its cost is the family's spend from the ledger (subagents included); a run
    from before the ledger gets the list-price estimate of its usage."""
    if family is not None and family.requests + family.unsettled:
        cost = family.known
    else:
        cost = estimate_cost(run.model, view.usage)
    budget = None if family is None or run.spec.caps.max_cost is None else run.spec.caps.max_cost + float(family.raised)
    return {"max_cost_usd": budget, "budget_warning": budget is not None and cost is not None and cost >= 0.8 * budget,
            "priced": family is None or not family.unpriced,
            "run_id": run.run_id, "status": view.status.value, "step": view.step, "next_action": view.next_action,
            "turn": view.turn, "model": run.model, "objective": run.spec.objective,
            "tokens": view.usage.total_input + view.usage.output_tokens,
            "usage": view.usage.model_dump(), "cost_usd": cost, "model_calls": view.model_calls,
            "tool_calls": view.tool_calls, "created_at": run.created_at.isoformat(),
            "waiting_approval": view.pending_approval is not None, "parent_run_id": run.parent_run_id}


def list_runs(c: Console, *, status: str | None = None, waiting: bool | None = None,
              limit: int = 50) -> list[dict[str, Any]]:
    rows = [run_row(c, r) for r in c.store.list_runs(limit=limit)]
    if status:
        rows = [r for r in rows if r["status"] == status]
    if waiting is not None:
        rows = [r for r in rows if r["waiting_approval"] == waiting]
    return rows


FACTS_SHOWN = 500
"""Facts the run page and its JSON twin list at most (current ones first); `GET
/api/runs/{run_id}/facts` and `longrun facts` list them all."""


def run_facts(c: Console, run_id: str, *, limit: int = FACTS_SHOWN) -> dict[str, Any]:
    """The run's fact store as the run page shows it: current facts, each marked shown or left
    out by the last projection, then the superseded ones with what replaced them (from
    `longrun.context.list_facts`, as `longrun facts` computes it). Facts change only at a
    compaction, so the page asks for this at load and after a compaction event."""
    listing = list_facts(c.store.facts(run_id), c.store.latest_projection(run_id), include_superseded=True)
    current = [f.as_dict() for f in listing.facts if f.current]
    old = [f.as_dict() for f in listing.facts if not f.current]
    shown_current = current[:limit]
    shown_old = old[:max(0, limit - len(shown_current))]
    return {"projection_version": listing.projection_version, "current": listing.current,
            "superseded": listing.total - listing.current, "total": listing.total, "left_out": listing.left_out,
            "items": shown_current + shown_old, "more": len(current) + len(old) - len(shown_current) - len(shown_old)}


def facts_listing(c: Console, run_id: str, *, kind: str | None = None, subject: str = "",
                  everything: bool = False) -> dict[str, Any]:
    """The whole listing `longrun facts RUN --json` prints, for `GET /api/runs/{run_id}/facts`."""
    projection = c.store.latest_projection(run_id)
    listing = list_facts(c.store.facts(run_id), projection, query=subject, kind=kind, include_superseded=everything)
    return {"run_id": run_id, "projection_version": listing.projection_version, "current": listing.current,
            "total": listing.total, "left_out": listing.left_out, "facts": [f.as_dict() for f in listing.facts]}


def run_detail(c: Console, run_id: str, who: Principal | None, *, facts: bool = True) -> dict[str, Any]:
    """Everything the run page shows above the timeline; `facts=False` leaves out the fact store
    (the live fragments that do not show it)."""
    run = c.store.get_run(run_id)
    records = c.audits.records(run_id)
    state = c.store.load_state(run_id)
    view = status_from_records(run, state, records)
    limit, trigger = context_limits(run.spec)
    artifacts = [{"sha256": e.artifact_sha256, "tool": e.tool, "bytes": e.output_bytes, "seq": r.seq,
                  "summary": e.summary}
                 for r in records if isinstance((e := r.event), ToolRan) and e.artifact_sha256]
    return {
        **_row(run, view, c.store.family_spend(run_id)),
        "reason": view.reason, "state_version": state.state_version,
        "objective": state.objective, "constraints": list(state.constraints), "notes": list(state.notes),
        "decisions": [d.model_dump(mode="json") for d in state.decisions],
        # open and closed alike (closed ones are in `closed_items`, not in the state)
        "effects": [e.model_dump(mode="json") for e in c.store.all_effects(run_id, state)],
        "approvals": [a.model_dump(mode="json") for a in c.store.all_approvals(run_id, state)],
        "scopes": [{**s.model_dump(mode="json"), "uses_left": max(0, s.max_uses - s.uses)}
                   for s in c.store.all_scopes(run_id, state)],
        "pending_approval": pending_view(view.pending_approval, run, who) if view.pending_approval else None,
        "last_compaction": view.last_compaction.model_dump(mode="json") if view.last_compaction else None,
        "context": {"limit": limit, "trigger": trigger,
                    "points": [p.__dict__ for p in context_points(records)]},
        "artifacts": artifacts, "audit_events": len(records), "workspace": run.spec.workspace,
        "finished": RunStatus(view.status).finished,
        "facts": run_facts(c, run_id) if facts else None,
        **lineage_view(c, run_id),
    }


def lineage_view(c: Console, run_id: str) -> dict[str, Any]:
    """The run's family as the run page links it: the run it was forked from, and its forks."""
    point = c.store.lineage(run_id)
    parent = None if point is None else {"run_id": point.parent_run_id, "version": point.parent_version,
                                         "through_seq": point.parent_through_seq, "commit": point.parent_commit}
    forks = [{"run_id": f.run_id, "version": f.parent_version} for f in c.store.forks(run_id)]
    return {"forked_from": parent, "forks": forks}


def context_svg(c: Console, run_id: str) -> str:
    run = c.store.get_run(run_id)
    limit, trigger = context_limits(run.spec)
    return render.svg_chart(context_points(c.audits.records(run_id)), limit=limit, trigger=trigger,
                            title=f"{run_id}: request size per model call")


def timeline(store: Store, run_id: str, *, after: int = 0, limit: int = 100) -> dict[str, Any]:
    rows = store.audit_page(run_id, after_seq=after, limit=limit + 1)
    items = [event_item(r) for r in rows[:limit]]
    return {"run_id": run_id, "items": items, "next_after": items[-1]["seq"] if items else after,
            "more": len(rows) > limit}


def pending_approvals(c: Console, who: Principal, *, everything: bool = False,
                      limit: int = 200) -> list[dict[str, Any]]:
    """Every unanswered approval request of a running run: those `who` may decide, or (with
    `everything`) all of them, each saying whether `who` may decide it."""
    out = []
    for run in c.store.list_runs(limit=limit):
        if RunStatus(run.status).finished:
            continue
        pending = pending_from_audit(c.audits.records(run.run_id), run.spec.approval_ttl_seconds)
        if pending is None:
            continue
        item = pending_view(pending, run, who)
        if item["can_decide"] or everything:
            out.append(item)
    out.sort(key=lambda i: i["expires_at"])
    return out


__all__ = ["can_decide", "category", "context_svg", "event_item", "facts_listing", "lineage_view", "list_runs", "pending_approvals", "run_detail",
           "run_facts", "run_row", "timeline"]
