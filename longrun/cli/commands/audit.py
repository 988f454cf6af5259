"""`longrun audit` (the full timeline of a run, from PostgreSQL alone) and `longrun usage`."""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from longrun import render
from longrun.auth.audit_check import DecisionProblem, DecisionReport, verify_decisions
from longrun.cli.commands.common import EXIT_FAIL, EXIT_OK, dump, open_store_only, print_json, say
from longrun.client.spend_view import spend_line
from longrun.models.audit import (
    ModelCalled,
)
from longrun.models.blocks import Message, TextBlock, ToolResultBlock, ToolUseBlock
from longrun.providers.prices import format_dollars
from longrun.store import ChainVerdict, Store
from longrun.views_common import clip as _clip
from longrun.views_common import describe_event

SOURCES = ("transcript", "state", "audit")


# ------------------------------------------------------------------------------------ timeline


@dataclass(frozen=True)
class Row:
    at: datetime
    source: str
    seq: int
    kind: str
    detail: str
    data: Any

    def to_dict(self) -> dict[str, Any]:
        return {"at": self.at.isoformat(), "source": self.source, "seq": self.seq, "kind": self.kind,
                "detail": self.detail, "data": dump(self.data)}


def describe_message(m: Message) -> str:
    parts = []
    for b in m.content:
        if isinstance(b, TextBlock):
            parts.append(f"text {_clip(b.text, 100)!r}")
        elif isinstance(b, ToolUseBlock):
            parts.append(f"tool_use {b.name} {_clip(json.dumps(b.input, ensure_ascii=False), 80)}")
        elif isinstance(b, ToolResultBlock):
            tool = getattr(b, "longrun_tool", None) or b.tool_use_id
            content = b.content if isinstance(b.content, str) else json.dumps(b.content)
            parts.append(f"tool_result {tool}{' ERROR' if b.is_error else ''} ({len(content)} chars)")
        else:
            parts.append(b.type)
    return "; ".join(parts)


def timeline(store: Store, run_id: str) -> list[Row]:
    rows: list[Row] = []
    for t in store.transcript(run_id):
        rows.append(Row(t.created_at, "transcript", t.seq, t.role, describe_message(t.message),
                        {"role": t.role, "turn": t.turn, "token_estimate": t.token_estimate,
                         "message": t.message.to_wire(), "hash": t.hash}))
    for v in store.state_history(run_id):
        s = v.state
        rows.append(Row(v.created_at, "state", v.version, "state_version",
                        f"v{v.version} by {v.actor}: {_clip(v.reason, 70)} [step {s.current_step.value}, next "
                        f"{s.next_action.value}]", {"actor": v.actor, "reason": v.reason,
                                                     "state": s.model_dump(mode="json"), "hash": v.hash}))
    for r in store.audit(run_id):
        rows.append(Row(r.created_at, "audit", r.seq, r.kind, describe_event(r),
                        {"actor": r.actor, "event": r.event.model_dump(mode="json"), "hash": r.hash}))
    rows.sort(key=lambda r: (r.at, SOURCES.index(r.source), r.seq))
    return rows


def summary(store: Store, run_id: str, rows: list[Row]) -> dict[str, Any]:
    run = store.get_run(run_id)
    state = store.load_state(run_id)
    events = [r.data["event"] for r in rows if r.source == "audit"]
    kinds = Counter(e["kind"] for e in events)
    verdicts = Counter(e["verdict"] for e in events if e["kind"] == "gate_verdict")
    outcomes = [e["report"] for e in events if e["kind"] == "compaction"]
    compactions = [c for c in outcomes if c["outcome"] not in ("noop", "failed")]
    return {
        "run_id": run_id,
        "status": run.status,
        "reason": run.reason,
        "model": run.model,
        "transcript_entries": sum(1 for r in rows if r.source == "transcript"),
        "state_versions": sum(1 for r in rows if r.source == "state"),
        "audit_events": len(events),
        "model_calls": kinds["model_called"],
        "tool_calls": kinds["tool_ran"],
        "gate_verdicts": dict(verdicts),
        "approvals": {k: kinds[f"approval_{k}"] for k in ("requested", "granted", "rejected", "expired", "refused")},
        "effects": dict(Counter(e.status.value for e in store.all_effects(run_id, state))),
        "compactions": len(compactions),
        "failed_compactions": sum(1 for c in outcomes if c["outcome"] == "failed"),
        "lossy_compactions": sum(1 for c in compactions if {"summarize", "enforce"} & set(c["stages_run"])),
        "decisions": len(state.decisions),
        "notes": len(state.notes),
    }


def summary_lines(s: dict[str, Any], verdict: ChainVerdict | None) -> list[str]:
    gv = s["gate_verdicts"]
    ap = s["approvals"]
    lines = [
        f"run {s['run_id']}: {s['status']}{' (' + s['reason'] + ')' if s['reason'] else ''}",
        f"  {s['transcript_entries']} transcript entries, {s['state_versions']} state versions, "
        f"{s['audit_events']} audit events",
        f"  {s['model_calls']} model calls, {s['tool_calls']} tool calls; gate: "
        + ", ".join(f"{gv.get(k, 0)} {k}" for k in ("allow", "needs_approval", "deny")),
        f"  approvals: {ap['requested']} requested, {ap['granted']} granted, {ap['rejected']} rejected, "
        f"{ap['expired']} expired, {ap['refused']} refused answers",
        "  effects: " + (", ".join(f"{n} {k}" for k, n in sorted(s["effects"].items())) or "none"),
        f"  compactions: {s['compactions']} ({s['lossy_compactions']} lossy, {s['failed_compactions']} failed); "
        f"{s['decisions']} decisions, {s['notes']} notes in the state",
    ]
    if verdict is not None:
        lines.append(("  chain verified: " if verdict.ok else "  CHAIN BROKEN: ") + str(verdict))
    return lines


@dataclass
class RunAudit:
    """One run's timeline, summary, chain verdict and decision check, with its subagents'
    audits nested."""

    run_id: str
    rows: list[Row]
    summary: dict[str, Any]
    verdict: ChainVerdict | None
    children: list[RunAudit]
    decisions: DecisionReport | None = None

    def broken(self) -> list[ChainVerdict | DecisionProblem]:
        mine: list[ChainVerdict | DecisionProblem] = []
        if self.verdict is not None and not self.verdict.ok:
            mine.append(self.verdict)
        if self.decisions is not None:
            mine.extend(self.decisions.problems)
        return mine + [v for c in self.children for v in c.broken()]

    def to_dict(self) -> dict[str, Any]:
        v = self.verdict
        return {
            "run_id": self.run_id,
            "timeline": [r.to_dict() for r in self.rows],
            "summary": self.summary,
            "verify": None if v is None else {"ok": v.ok, "table": v.table, "row": v.row, "reason": v.reason,
                                               "message": str(v)},
            "decisions": None if self.decisions is None else {
                "ok": self.decisions.ok, "checked": self.decisions.checked,
                "problems": [{"where": p.where, "reason": p.reason} for p in self.decisions.problems]},
            "children": [c.to_dict() for c in self.children],
        }


def audit_run(store: Store, run_id: str, verify: bool) -> RunAudit:
    rows = timeline(store, run_id)
    return RunAudit(
        run_id=run_id,
        rows=rows,
        summary=summary(store, run_id, rows),
        verdict=store.verify_chain(run_id) if verify else None,
        children=[audit_run(store, c.run_id, verify) for c in store.list_runs(limit=1000, parent_run_id=run_id)],
        decisions=verify_decisions(store, run_id) if verify else None,
    )


def _print_table(a: RunAudit, indent: str = "") -> None:
    table = render.table([(render.when(r.at), r.source, r.seq, r.kind, r.detail) for r in a.rows],
                         ["time", "source", "#", "kind", "detail"], max_width=150 - len(indent))
    for line in table.splitlines():
        say(indent + line)
    say()
    for line in summary_lines(a.summary, a.verdict):
        say(indent + line)
    if a.decisions is not None:
        say(indent + ("  decisions verified: " if a.decisions.ok else "  DECISIONS DO NOT VERIFY: ") + str(a.decisions))
    for child in a.children:
        say()
        say(f"{indent}  ── subagent {child.run_id} (child of {a.run_id}) " + "─" * 20)
        _print_table(child, indent + "    ")


def _print_jsonl(a: RunAudit) -> None:
    for r in a.rows:
        print(json.dumps({"run_id": a.run_id, **r.to_dict()}, ensure_ascii=False, default=str))
    for child in a.children:
        _print_jsonl(child)


def cmd_audit(args: argparse.Namespace) -> int:
    store = open_store_only()
    try:
        audit = audit_run(store, args.run, args.verify)
    finally:
        store.engine.dispose()
    if args.json:
        print_json(audit.to_dict())
    elif args.format == "jsonl":
        _print_jsonl(audit)
        summary_row = audit.to_dict()
        summary_row.pop("timeline")
        for child in summary_row["children"]:
            child.pop("timeline")
        print(json.dumps(summary_row, ensure_ascii=False, default=str), flush=True)
    else:
        _print_table(audit)
    broken = audit.broken()
    if broken:
        for verdict in broken:
            print(f"longrun audit: {verdict}", file=sys.stderr)
        return EXIT_FAIL
    return EXIT_OK


# ------------------------------------------------------------------------------------ usage

USAGE_FIELDS = ("turn", "transcript_seq", "input", "cache_write", "cache_read", "output", "total_input",
                "estimated", "calibrated", "calibrated_error_pct", "cost_usd")


def usage_rows(store: Store, run_id: str) -> list[dict[str, Any]]:
    """One row per model request: its tokens (from the audit) and its cost (from the ledger; None
    when the model has no price, or the run is older than the ledger)."""
    costs = {c.transcript_seq: c.cost_usd for c in store.request_costs(run_id) if c.status == "answered"}
    rows = []
    for rec in store.audit(run_id):
        e = rec.event
        if not isinstance(e, ModelCalled):
            continue
        u = e.usage
        total = u.total_input
        err = round(100.0 * (e.calibrated_tokens - total) / total, 1) if total else None
        rows.append({"turn": e.turn, "transcript_seq": e.transcript_seq, "input": u.input_tokens,
                     "cache_write": u.cache_creation_input_tokens, "cache_read": u.cache_read_input_tokens,
                     "output": u.output_tokens, "total_input": total, "estimated": e.estimated_tokens,
                     "calibrated": e.calibrated_tokens, "calibrated_error_pct": err,
                     "cost_usd": costs.get(e.transcript_seq)})
    return rows


def cmd_usage(args: argparse.Namespace) -> int:
    store = open_store_only()
    try:
        model = store.get_run(args.run).model
        rows = usage_rows(store, args.run)
        family = store.family_spend(args.run)
        max_cost = store.get_run(family.root_run_id).spec.caps.max_cost if family.root_run_id else None
    finally:
        store.engine.dispose()
    totals: dict[str, Any] = {k: sum(r[k] for r in rows) for k in ("input", "cache_write", "cache_read", "output",
                                                                    "total_input")}
    priced = [r["cost_usd"] for r in rows]
    totals["cost_usd"] = None if not rows or any(c is None for c in priced) else sum(priced)
    if args.json:
        print_json({"run_id": args.run, "requests": rows, "totals": totals,
                    "family": {"root_run_id": family.root_run_id, "cost_usd": family.known,
                               "requests": family.requests, "unpriced": family.unpriced,
                               "unsettled": family.unsettled, "raised_usd": float(family.raised)}})
    elif args.csv:
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=USAGE_FIELDS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        sys.stdout.write(buf.getvalue())
        sys.stdout.flush()
    else:
        if not rows:
            say(f"run {args.run} has made no model requests yet")
            return EXIT_OK
        table_rows = [[format_dollars(r[k]) if k == "cost_usd" else r[k] if r[k] is not None else "-"
                       for k in USAGE_FIELDS] for r in rows]
        table_rows.append(["total", "", totals["input"], totals["cache_write"], totals["cache_read"], totals["output"],
                           totals["total_input"], "", "", "", format_dollars(totals["cost_usd"])])
        say(render.table(table_rows, ["turn", "seq", "input", "cache write", "cache read", "output", "total input",
                                      "estimated", "calibrated", "error %", "cost"]))
        say("estimated/calibrated: the request size the context pipeline computed before sending it; error % = "
            "calibrated vs the provider's total input")
        say(spend_line(args.run, family, model, max_cost))
    return EXIT_OK
