"""What a notification says: a JSON body in the shape of a Slack incoming webhook (`text`, which
Slack shows as the message) plus the event's fields and the exact commands that answer it.

    {"text": "...", "event": "approval_requested", "delivery_id": "...", "run_id": "run-...",
     "at": "2026-...", "objective": "...", "command": "longrun approve RUN APR --as alice",
     "commands": {"approve": "...", "reject": "...", "status": "longrun status RUN"}, ...}

Only what a person needs to act is in it: ids, the tool and its short argument preview, the
decision, the final status, the reason a run waits. Everything has been through the redactor
before it was stored, and the activity redacts the body once more before it is sent.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from longrun.models.audit import NotifyEvent

MAX_PREVIEW = 300


class NotificationBody(BaseModel):
    """The JSON a webhook receives (fields that do not apply to the event are left out)."""

    model_config = ConfigDict(extra="forbid")

    text: str
    event: NotifyEvent
    delivery_id: str
    run_id: str
    at: datetime
    objective: str
    command: str
    commands: dict[str, str]
    approval_id: str | None = None
    tool: str | None = None
    arguments: dict[str, Any] | None = None
    expires_at: datetime | None = None
    approvers: list[str] | None = None
    verdict: Literal["granted", "rejected"] | None = None
    approver: str | None = None
    status: str | None = None
    reason: str | None = None
    spent_usd: float | None = None
    limit_usd: float | None = None

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


def encode(body: dict[str, Any]) -> bytes:
    """The exact bytes sent (and signed)."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _slack(text: str) -> str:
    """Text Slack shows literally: `&`, `<` and `>` escaped as its message format asks."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _clip(text: str, n: int = MAX_PREVIEW) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def status_command(run_id: str) -> str:
    return f"longrun status {run_id}"


def approval_commands(run_id: str, approval_id: str, approvers: list[str]) -> dict[str, str]:
    """As `longrun status` prints them (`longrun.cli.commands.watch.answer_commands`)."""
    who = approvers[0] if approvers else "NAME"
    return {
        "approve": f"longrun approve {run_id} {approval_id} --as {who}",
        "reject": f'longrun reject {run_id} {approval_id} --as {who} --reason "..."',
        "status": status_command(run_id),
    }


def approval_requested(
    *, run_id: str, delivery_id: str, at: datetime, objective: str, approval_id: str, tool: str,
    arguments: dict[str, Any], expires_at: datetime | None, approvers: list[str],
) -> NotificationBody:
    commands = approval_commands(run_id, approval_id, approvers)
    args = _clip(json.dumps(arguments, ensure_ascii=False))
    expiry = f" (expires {expires_at.isoformat(timespec='seconds')})" if expires_at else ""
    text = "\n".join([
        f"*longrun* run `{run_id}` needs an approval{expiry}: `{tool}` {_slack(args)}",
        f"Objective: {_slack(_clip(objective, 200))}",
        f"Approve: `{commands['approve']}`",
        f"Reject: `{commands['reject']}`",
    ])
    return NotificationBody(
        text=text, event="approval_requested", delivery_id=delivery_id, run_id=run_id, at=at, objective=objective,
        command=commands["approve"], commands=commands, approval_id=approval_id, tool=tool, arguments=arguments,
        expires_at=expires_at, approvers=approvers,
    )


def approval_decided(
    *, run_id: str, delivery_id: str, at: datetime, objective: str, approval_id: str, tool: str | None,
    verdict: Literal["granted", "rejected"], approver: str, reason: str | None,
) -> NotificationBody:
    command = status_command(run_id)
    what = f" for `{tool}`" if tool else ""
    why = f": {_slack(_clip(reason))}" if reason else ""
    text = "\n".join([
        f"*longrun* run `{run_id}`: approval `{approval_id}`{what} {verdict} by {_slack(approver)}{why}",
        f"Status: `{command}`",
    ])
    return NotificationBody(
        text=text, event="approval_decided", delivery_id=delivery_id, run_id=run_id, at=at, objective=objective,
        command=command, commands={"status": command}, approval_id=approval_id, tool=tool, verdict=verdict,
        approver=approver, reason=reason,
    )


def budget(
    *, event: Literal["budget_requested", "budget_warning"], run_id: str, delivery_id: str, at: datetime,
    objective: str, request_id: str | None, spent_usd: float, limit_usd: float, approvers: list[str],
) -> NotificationBody:
    """The run family reached its budget and waits (`budget_requested`), or spent 80% of it."""
    who = approvers[0] if approvers else "NAME"
    commands = {"status": status_command(run_id)}
    spent = f"${spent_usd:,.4f} of ${limit_usd:,.2f}"
    if event == "budget_requested":
        commands["raise"] = f"longrun raise-budget {run_id} --by USD --as {who}"
        commands["reject"] = f'longrun raise-budget {run_id} --reject --as {who} --reason "..."'
        lines = [f"*longrun* run `{run_id}` reached its budget ({spent}) and waits for a human",
                 f"Raise: `{commands['raise']}`", f"End it: `{commands['reject']}`"]
    else:
        lines = [f"*longrun* run `{run_id}` has spent 80% of its budget ({spent})", f"Status: `{commands['status']}`"]
    return NotificationBody(
        text="\n".join([*lines[:1], f"Objective: {_slack(_clip(objective, 200))}", *lines[1:]]), event=event,
        delivery_id=delivery_id, run_id=run_id, at=at, objective=objective,
        command=commands.get("raise", commands["status"]), commands=commands, approval_id=request_id,
        approvers=approvers, spent_usd=spent_usd, limit_usd=limit_usd,
    )


def ask_human(*, run_id: str, delivery_id: str, at: datetime, objective: str, reason: str) -> NotificationBody:
    say = f'longrun say {run_id} "..."'
    commands = {"say": say, "status": status_command(run_id)}
    text = "\n".join([
        f"*longrun* run `{run_id}` waits for a human: {_slack(_clip(reason))}",
        f"Objective: {_slack(_clip(objective, 200))}",
        f"Answer: `{say}`",
        f"Status: `{commands['status']}`",
    ])
    return NotificationBody(
        text=text, event="ask_human", delivery_id=delivery_id, run_id=run_id, at=at, objective=objective,
        command=say, commands=commands, reason=reason,
    )


def run_finished(
    *, run_id: str, delivery_id: str, at: datetime, objective: str, status: str, reason: str
) -> NotificationBody:
    commands = {"status": status_command(run_id), "audit": f"longrun audit {run_id} --verify"}
    text = "\n".join([
        f"*longrun* run `{run_id}` {status}: {_slack(_clip(reason))}",
        f"Objective: {_slack(_clip(objective, 200))}",
        f"Status: `{commands['status']}` · audit: `{commands['audit']}`",
    ])
    return NotificationBody(
        text=text, event="run_finished", delivery_id=delivery_id, run_id=run_id, at=at, objective=objective,
        command=commands["status"], commands=commands, status=status, reason=reason,
    )
