"""`longrun approve`, `reject`, `pause`, `resume`, `cancel`, `say` and `compact-now`: updates to a
live run.

Every refusal comes from the workflow's validators (not an approver, a different pending action,
expired, already decided) and is shown as it is; a refused update writes nothing."""

from __future__ import annotations

import argparse
import json
from typing import Any

from temporalio.client import Client

from longrun import render
from longrun.cli.commands.common import (
    EXIT_OK,
    CliError,
    add_json,
    add_signer_args,
    print_json,
    say,
    stack,
    usage_error,
)
from longrun.client import calls, decide, runs
from longrun.client.status import probe_workflow
from longrun.errors import ApprovalError
from longrun.models.audit import ApprovalExpired
from longrun.models.io import StatusQueryResult
from longrun.store import InvalidInputError, Store
from longrun.store.repository import MAX_INSTRUCTION_CHARS


def register(sub: argparse._SubParsersAction[Any]) -> None:
    ap = sub.add_parser("approve", help="approve the pending action of a run",
                        description="Approve the action a run waits on. APPROVAL defaults to the pending one. The "
                        "decision is signed with your key (--as NAME reads $LONGRUN_HOME/keys/NAME.pem, or --key) and "
                        "verified by the worker against the key registered for you; it is bound to that exact tool "
                        "and arguments, is used once, and expires after --ttl.")
    ap.add_argument("run", help="run id")
    ap.add_argument("approval", nargs="?", help="approval id (default: the pending one)")
    add_signer_args(ap)
    ap.add_argument("--ttl", metavar="DURATION", help="how long the approval stays valid (e.g. 30m, 2h; default: the run's)")
    ap.add_argument("--edit", metavar="JSON", help="approve the call with these arguments changed, e.g. "
                    "'{\"new\": \"...\"}' (the agent is told what you changed)")
    add_json(ap)
    ap.set_defaults(func=cmd_approve)

    rj = sub.add_parser("reject", help="reject the pending action of a run",
                        description="Reject the action a run waits on; the agent is told the reason and moves on.")
    rj.add_argument("run", help="run id")
    rj.add_argument("approval", nargs="?", help="approval id (default: the pending one)")
    add_signer_args(rj)
    rj.add_argument("--reason", required=True, help="why (the agent reads it)")
    add_json(rj)
    rj.set_defaults(func=cmd_reject)

    for action, text in (
        ("pause", "pause a run at the next turn boundary"),
        ("resume", "resume a paused run"),
        ("cancel", "cancel a run at the next safe point (an effect in flight settles first)"),
    ):
        p = sub.add_parser(action, help=text, description=text[0].upper() + text[1:] + ".")
        p.add_argument("run", help="run id")
        add_json(p)
        p.set_defaults(func=cmd_control, action=action)

    sy = sub.add_parser("say", help="send the agent an instruction (or a new constraint)",
                        description="Queue a message for the agent's next turn. With --constraint it becomes a "
                        "binding constraint, kept verbatim in every request; a pending approval is then voided and "
                        "the action must be proposed again.")
    sy.add_argument("run", help="run id")
    sy.add_argument("text", help="what to tell the agent")
    sy.add_argument("--constraint", action="store_true", help="record the text as a binding constraint")
    add_json(sy)
    sy.set_defaults(func=cmd_say)

    cn = sub.add_parser("compact-now", help="ask a run to compact its context after the current turn",
                        description="Ask for an operator compaction: once the current turn's results are committed, "
                        "the run compacts whatever its size (trigger `operator`: every old result the policy allows "
                        "is cleared to a reference and older turns are summarized), then goes on. A run that is "
                        "paused or waits for an approval compacts when it goes on. `watch` and `audit` show the "
                        "compaction (compaction_started, then its outcome).")
    cn.add_argument("run", help="run id")
    add_json(cn)
    cn.set_defaults(func=cmd_compact_now)


async def _live(client: Client, store: Store, run_id: str, what: str) -> StatusQueryResult:
    """The live status, or a clear failure when the run is unknown or its workflow is gone."""
    run = store.get_run(run_id)  # RunNotFoundError: unknown run id
    live, why = await probe_workflow(client, run_id)
    if live is None and why in ("gone", "closed"):
        raise CliError(f"run {run_id} is {run.status}" + (f" ({run.reason})" if run.reason else "")
                       + f"; nothing to {what}")
    if live is None:
        raise CliError(f"cannot {what} run {run_id} now: {why}")
    return live


def _expired(store: Store, run_id: str, approval_id: str | None) -> str | None:
    for rec in reversed(store.audit(run_id)):
        if isinstance(rec.event, ApprovalExpired) and approval_id in (None, rec.event.approval_id):
            return (f"approval {rec.event.approval_id} expired at {render.when(rec.created_at)} before anyone "
                    f"answered it; the run now waits for a human: `longrun say {run_id} \"...\"` tells it how to go "
                    "on (the action must be proposed again)")
    return None


async def _decide(args: argparse.Namespace, verb: str) -> int:
    ttl = None
    if getattr(args, "ttl", None):
        try:
            ttl = render.parse_duration(args.ttl)
        except ValueError as exc:
            raise usage_error(f"--ttl: {exc}") from exc
    edit = None
    if getattr(args, "edit", None):
        try:
            edit = json.loads(args.edit)
        except json.JSONDecodeError as exc:
            raise usage_error(f"--edit: not JSON ({exc}); pass an object such as '{{\"new\": \"...\"}}'") from exc
        if not isinstance(edit, dict) or not edit:
            raise usage_error("--edit: pass a JSON object of the arguments to change")
    async with stack() as (client, store):
        assert client is not None
        try:
            live = await _live(client, store, args.run, verb)
        except CliError as exc:  # a finished run: refused, and recorded in its audit log
            calls.record_refusal(store, args.run, args.approval or "", args.approver, str(exc))
            raise
        approval_id = args.approval
        if approval_id is None:
            if live.pending_approval is None:
                raise CliError(_expired(store, args.run, None)
                               or f"run {args.run} has no pending approval (status {live.status}); nothing to {verb}")
            approval_id = live.pending_approval.approval_id
        try:
            if verb == "approve":
                message = await decide.approve(client, args.run, approval_id, args.approver, ttl, store=store,
                                               edit=edit, key_path=args.key)
            else:
                message = await decide.reject(client, args.run, approval_id, args.approver, args.reason, store=store,
                                              key_path=args.key)
        except ApprovalError as exc:
            text = str(exc)
            if "no pending approval" in text or "does not match" in text:
                text = _expired(store, args.run, approval_id) or text
            elif "expired" in text:
                text += (f"; the run will wait for a human: `longrun say {args.run} \"...\"` tells it how to go on "
                         "(the action must be proposed again)")
            raise CliError(f"{verb} refused: {text}") from exc
    if args.json:
        print_json({"run_id": args.run, "approval_id": approval_id, "result": message})
    else:
        say(message)
    return EXIT_OK


async def cmd_approve(args: argparse.Namespace) -> int:
    return await _decide(args, "approve")


async def cmd_reject(args: argparse.Namespace) -> int:
    return await _decide(args, "reject")


async def cmd_control(args: argparse.Namespace) -> int:
    async with stack() as (client, store):
        assert client is not None
        await _live(client, store, args.run, args.action)
        try:
            message = await calls.control(client, args.run, args.action)
        except ApprovalError as exc:
            raise CliError(f"{args.action} refused: {exc}") from exc
    if args.json:
        print_json({"run_id": args.run, "action": args.action, "result": message})
    else:
        say(message)
    return EXIT_OK


async def cmd_say(args: argparse.Namespace) -> int:
    if not args.text.strip() or len(args.text) > MAX_INSTRUCTION_CHARS:
        raise usage_error(f"say needs a text of 1 to {MAX_INSTRUCTION_CHARS:,} characters, got {len(args.text):,}; "
                          "nothing was sent")
    async with stack() as (client, store):
        assert client is not None
        await _live(client, store, args.run, "say")
        try:
            message = await runs.say(client, store, args.run, args.text, constraint=args.constraint)
        except InvalidInputError as exc:  # empty or over 20,000 characters: nothing was stored or sent
            raise usage_error(f"say refused: {exc}") from exc
        except ApprovalError as exc:
            raise CliError(f"say refused: {exc}") from exc
    if args.json:
        print_json({"run_id": args.run, "constraint": args.constraint, "result": message})
    else:
        say(message)
    return EXIT_OK


async def cmd_compact_now(args: argparse.Namespace) -> int:
    async with stack() as (client, store):
        assert client is not None
        live = await _live(client, store, args.run, "compact")
        try:
            message = await calls.control(client, args.run, "compact_now")
        except ApprovalError as exc:
            raise CliError(f"compact-now refused: {exc}") from exc
    if live.status in ("paused", "waiting_approval"):
        message += f" (the run is {live.status.replace('_', ' ')}: it compacts when it goes on)"
    if args.json:
        print_json({"run_id": args.run, "action": "compact_now", "status": live.status, "result": message})
    else:
        say(message)
    return EXIT_OK
