"""`longrun approve`, `reject`, `pause`, `resume`, `cancel`, `say` and `compact-now`: updates to a
live run.

Every refusal comes from the workflow's validators (not an approver, a different pending action,
expired, already decided) and is shown as it is; a refused update writes nothing."""

from __future__ import annotations

import argparse
import json

from temporalio.client import Client

from longrun import render
from longrun.cli.commands.common import (
    EXIT_OK,
    CliError,
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
