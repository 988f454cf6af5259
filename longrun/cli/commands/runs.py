"""`longrun status`, `watch` and `runs`: reading runs. `longrun start` is in `start`, so these
commands do not import what starting takes (the start request's rules, the MCP and webhook
settings, the context pipeline that renders the opening message; tests/test_import_cost.py).
"""

from __future__ import annotations

import argparse
from typing import Any

from longrun import render
from longrun.cli.commands.common import EXIT_FAIL, EXIT_OK, model_label, open_store_only, print_json, say, stack
from longrun.cli.commands.runs_tree import lineage_lines, tree_lines
from longrun.cli.commands.watch import Watcher, answer_commands, describe_pending
from longrun.client import status as client_status
from longrun.client.spend_view import spend_cell, spend_line
from longrun.models.audit import ModelCalled, ToolRan
from longrun.models.run import RunStatus, RunStatusView
from longrun.models.spec import RunSpec
from longrun.models.state import Scope, utcnow
from longrun.store import Store
from longrun.tools.autorun import runs_code_warnings
from longrun.views_common import context_limits, describe_compaction

# ------------------------------------------------------------------------------------ status


def last_request_tokens(store: Store, run_id: str) -> int | None:
    calls = [r.event for r in store.audit(run_id) if isinstance(r.event, ModelCalled)]
    return calls[-1].calibrated_tokens if calls else None


def last_sandbox(store: Store, run_id: str) -> str | None:
    """Where the run's last command ran, as its tool_ran event recorded it."""
    used = [r.event.sandbox for r in store.audit(run_id) if isinstance(r.event, ToolRan) and r.event.sandbox]
    return used[-1] if used else None


def describe_sandbox(spec: RunSpec, used: str | None) -> str:
    chosen = {"auto": "auto (the worker's LONGRUN_SANDBOX, else bwrap, else unshare)",
              "none": "none (no sandbox, chosen explicitly: commands see what the worker sees)"}.get(spec.sandbox, spec.sandbox)
    network = ("network allowed (outbound only: not the host's loopback or addresses, nor the stack's hosts)"
               if spec.allow_network else "no network")
    return f"{chosen}; {network}" + (f"; the last command ran under {used}" if used else "")


def status_lines(
    view: RunStatusView, source: str, spec: RunSpec, last_tokens: int | None, sandbox_used: str | None = None,
    spend: str | None = None,
) -> list[str]:
    limit, trigger = context_limits(spec)
    u = view.usage
    if source == "temporal":
        where = "from the live workflow"
    elif source == "postgres":
        where = "from PostgreSQL: the workflow has ended"
    else:
        where = f"from PostgreSQL; {source.split(': ', 1)[1]}"
    rows = [
        ("run", f"{view.run_id}  {view.status.value.upper()}  ({where})"),
        ("model", model_label(view.model)),
        ("objective", spec.objective),
        ("step", view.step),
        ("next action", view.next_action),
        ("state version", view.state_version),
        ("turn", view.turn),
        ("tokens", f"input {u.total_input:,} (uncached {u.input_tokens:,}, cache read {u.cache_read_input_tokens:,}, "
                   f"cache write {u.cache_creation_input_tokens:,}), output {u.output_tokens:,}; "
                   f"{view.model_calls} model calls, {view.tool_calls} tool calls"),
        ("spend", spend),
        ("context", render.meter(last_tokens or 0, limit, trigger, label="") + ("  (last request)" if last_tokens else "")),
        ("last compaction", describe_compaction(view.last_compaction) if view.last_compaction else "none"),
        ("context mode", None if spec.context.mode == "client" else (
            f"{spec.context.mode}{' + Anthropic server compaction' if spec.context.provider_compaction else ''}; what "
            "the provider cleared or compacted: the audit's provider_context events")),
        ("sandbox", describe_sandbox(spec, sandbox_used) if spec.allowed_commands else None),
        ("reason", view.reason or None),
        ("children", ", ".join(view.children) or None),
    ]
    lines = render.key_values(rows).splitlines()
    if view.pending_approval:
        lines += describe_pending(view.run_id, view.pending_approval, list(spec.approvers))
    elif view.status is RunStatus.paused and view.next_action == "ask_human":
        lines.append(f'the run waits for a human: `longrun say {view.run_id} "..."` tells it how to go on')
    elif view.status is RunStatus.paused:
        lines.append(f"paused: `longrun resume {view.run_id}` continues it")
    return lines


async def cmd_status(args: argparse.Namespace) -> int:
    async with stack(need_temporal=False) as (client, store):
        view, source = await client_status.run_status(client, store, args.run)
        spec = store.get_run(args.run).spec
        last = last_request_tokens(store, args.run)
        used = last_sandbox(store, args.run)
        scopes = store.all_scopes(args.run, store.load_state(args.run))  # in force and closed
        family = store.family_spend(args.run)
        root_cost = store.get_run(family.root_run_id).spec.caps.max_cost if family.root_run_id else None
        if args.json:
            limit, trigger = context_limits(spec)
            data = view.model_dump(mode="json")
            data["scopes"] = [scope_view(sc) for sc in scopes]
            src, _, note = source.partition(": ")
            point = store.lineage(args.run)
            data["forked_from"] = None if point is None else {
                "run_id": point.parent_run_id, "version": point.parent_version, "through_seq": point.parent_through_seq,
                "commit": point.parent_commit}
            data["forks"] = [f.run_id for f in store.forks(args.run)]
            data.update(source=src, note=note or None, approvers=spec.approvers, objective=spec.objective,
                        context={"last_request_tokens": last, "limit": limit, "trigger": trigger},
                        sandbox={"mode": spec.sandbox, "allow_network": spec.allow_network, "last_command": used},
                        spend={"cost_usd": family.known, "requests": family.requests, "unpriced": family.unpriced,
                               "root_run_id": family.root_run_id, "max_cost_usd": root_cost,
                               "raised_usd": float(family.raised)})
            if view.pending_approval:
                yes, no = answer_commands(view.run_id, view.pending_approval, list(spec.approvers))
                data["answer"] = {"approve": yes, "reject": no}
                data["pending_approval"]["runs_code"] = [
                    {"path": path, "why": why} for path, why in runs_code_warnings(view.pending_approval.arguments)
                ]
            print_json(data)
        else:
            for line in status_lines(view, source, spec, last, used,
                                     spend_line(args.run, family, spec.model, root_cost)) + lineage_lines(store, args.run):
                say(line)
            for sc in scopes:
                v = scope_view(sc)
                say(f"scope {sc.id}: {', '.join(sc.tools)} on {', '.join(sc.paths)}, {v['uses_left']} of {sc.max_uses} "
                    f"uses left, by {sc.granted_by}, " + (f"until {render.when(sc.expires_at)}" if v["in_force"]
                                                          else f"not in force: {v['why_not']}"))
    return EXIT_OK


def scope_view(sc: Scope) -> dict[str, Any]:
    """A standing approval as `status` shows it: uses left, and whether it is in force now."""
    why = sc.ended or ("expired" if utcnow() >= sc.expires_at else "used up" if sc.uses >= sc.max_uses else "")
    return {"scope_id": sc.id, "tools": sc.tools, "paths": sc.paths, "max_uses": sc.max_uses,
            "uses_left": max(0, sc.max_uses - sc.uses), "granted_by": sc.granted_by,
            "expires_at": sc.expires_at.isoformat(), "in_force": not why, "why_not": why or None}


async def cmd_watch(args: argparse.Namespace) -> int:
    async with stack(need_temporal=False) as (client, store):
        watcher = Watcher(client, store, args.run, emit=say, as_json=args.json)
        final = await watcher.follow(lambda _s: False, interval=max(0.1, args.interval))
    return EXIT_OK if final.status is RunStatus.completed else EXIT_FAIL


def cmd_runs(args: argparse.Namespace) -> int:
    store = open_store_only()
    try:
        runs = store.list_runs(limit=max(1, args.limit))
        tree = tree_lines(store, runs) if args.tree and not args.json else []
        spent = store.run_spend([r.run_id for r in runs])
    finally:
        store.engine.dispose()
    if args.json:
        print_json([{"run_id": r.run_id, "status": r.status, "model": r.model, "objective": r.spec.objective,
                     "workspace": r.spec.workspace, "created_at": r.created_at, "reason": r.reason,
                     "cost_usd": spent[r.run_id].known if r.run_id in spent else None} for r in runs])
        return EXIT_OK
    if tree:
        say("\n".join(tree))
        return EXIT_OK
    if not runs:
        say("no runs yet: start one with `longrun start --objective ... --workspace ...` (or try `longrun demo`)")
        return EXIT_OK
    say(render.table([(r.run_id, r.status, r.model, spend_cell(spent.get(r.run_id)), render.when(r.created_at),
                       r.spec.objective) for r in runs],
                     ["run", "status", "model", "spend", "created", "objective"], max_width=60))
    return EXIT_OK
