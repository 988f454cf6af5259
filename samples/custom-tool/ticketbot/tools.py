"""ticketbot's tools, made from typed functions: one that reads (a ticket of the tracker) and one
with an effect (a notes file in the run's workspace), with the reconcile that decides, after a
worker died mid-write, whether the write happened."""

import hashlib

import longrun
from longrun.tools import ReconcileOutcome, ToolContext, ToolError, ToolOutcome, confine

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


def notes_written(args: dict[str, object], ctx: ToolContext) -> ReconcileOutcome:
    """The write happened if the file holds exactly this text (a retry then must not write again)."""
    target = confine(ctx.workspace, str(args["path"]))
    if target.is_file() and target.read_text() == args["text"]:
        return ReconcileOutcome("confirmed", external_id=hashlib.sha256(target.read_bytes()).hexdigest())
    return ReconcileOutcome("none", detail="the file does not hold the text")


@longrun.tool(kind="effect", path_arg="path", content_arg="text", reconcile=notes_written)
def write_notes(path: str, text: str, ctx: ToolContext) -> ToolOutcome:
    """Write release notes to a file of the workspace (the whole file).

    Args:
        path: the notes file, relative to the workspace.
        text: the whole text of the notes.
    """
    target = confine(ctx.workspace, path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    return ToolOutcome(text=f"wrote {path}", external_id=hashlib.sha256(text.encode()).hexdigest())


TOOLS = [lookup_ticket, write_notes]
