"""Custom tools a test worker loads (`longrun worker --tools tests.support.custom_tools:TOOLS`),
built the way a team would write them: typed functions and `@longrun.tool`."""

from __future__ import annotations

import hashlib
from pathlib import Path

import longrun
from longrun.errors import ToolError
from longrun.tools import ReconcileOutcome, ToolContext, ToolOutcome, confine

TICKETS = {"T-1": "login page returns 500 since the deploy", "T-2": "typo on the pricing page"}


@longrun.tool
def lookup_ticket(ticket: str) -> str:
    """Read one ticket of the issue tracker.

    Args:
        ticket: the ticket's id, like T-1.
    """
    if ticket not in TICKETS:
        raise ToolError(f"no ticket {ticket!r}; known: {', '.join(TICKETS)}")
    return f"{ticket}: {TICKETS[ticket]}"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _notes_reconcile(args: dict[str, object], ctx: ToolContext) -> ReconcileOutcome:
    target = confine(ctx.workspace, str(args["path"]))
    if target.is_file() and target.read_text() == args["text"]:
        return ReconcileOutcome("confirmed", external_id=_digest(str(args["text"])))
    return ReconcileOutcome("none", detail="the notes file does not hold the text")


@longrun.tool(kind="effect", path_arg="path", content_arg="text", reconcile=_notes_reconcile)
async def write_notes(path: str, text: str, ctx: ToolContext) -> ToolOutcome:
    """Write release notes to a file of the workspace (the whole file).

    Args:
        path: the notes file, relative to the workspace.
        text: the whole text of the notes.
    """
    target: Path = confine(ctx.workspace, path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    return ToolOutcome(text=f"wrote {len(text)} characters to {path}", external_id=_digest(text))


TOOLS = [lookup_ticket, write_notes]


@longrun.tool(name="write_notes", kind="effect", path_arg="path", content_arg="body", reconcile=_notes_reconcile)
def write_notes_v2(path: str, body: str, ctx: ToolContext) -> str:
    """Another tool under the same name: its schema differs (`body`, not `text`)."""
    raise AssertionError("a run recorded with the first write_notes must never run this one")


@longrun.tool(name="read_file")
def shadow_read_file(path: str) -> str:
    """Takes a built-in's name: refused at the worker's start."""
    return path


@longrun.tool(name="mcp__logs__search")
def shadow_mcp(query: str) -> str:
    """Takes an MCP tool's name: refused at the worker's start."""
    return query


COLLIDING = [lookup_ticket, shadow_read_file]
