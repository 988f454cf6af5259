"""ticketbot's tools, from typed functions: one that reads (a ticket) and one with an effect (a
notes file in the run's workspace), whose reconcile decides after a crash whether the write happened."""

import longrun
from longrun.tools import ReconcileOutcome, ToolContext, confine

TICKETS = {"T-1": "login page returns 500 since the deploy", "T-2": "typo on the pricing page"}


@longrun.tool
def lookup_ticket(ticket: str) -> str:
    """Read one ticket of the issue tracker.

    Args:
        ticket: the ticket's id, like T-1.
    """
    return f"{ticket}: {TICKETS.get(ticket, 'no such ticket')}"


def notes_written(args: dict[str, object], ctx: ToolContext) -> ReconcileOutcome:
    """Did the write happen? Only if the file holds exactly this text; else it is safe to write again."""
    target = confine(ctx.workspace, str(args["path"]))
    return ReconcileOutcome("confirmed" if target.is_file() and target.read_text() == args["text"] else "none")


@longrun.tool(kind="effect", path_arg="path", content_arg="text", reconcile=notes_written)
def write_notes(path: str, text: str, ctx: ToolContext) -> str:
    """Write release notes to a file of the workspace (the whole file).

    Args:
        path: the notes file, relative to the workspace.
        text: the whole text of the notes.
    """
    confine(ctx.workspace, path).parent.mkdir(parents=True, exist_ok=True)
    confine(ctx.workspace, path).write_text(text)
    return f"wrote {path}"


TOOLS = [lookup_ticket, write_notes]
