"""`longrun show RUN [APPROVAL]`: the whole of what an approval would approve.

`status` and `watch` show a pending approval's arguments cut at 300 characters; this prints the
call's full canonical arguments from PostgreSQL, a unified diff against the file as it is now for
`write_file` and `apply_patch`, the files among them that run code, and the action hash the
approval binds, recomputed from those arguments (`longrun.client.approval_view`)."""

from __future__ import annotations

import argparse
from typing import Any

from longrun.cli.commands.common import EXIT_OK, add_json, print_json, say, stack
from longrun.client.approval_view import approval_view, render_view
from longrun.client.status import run_status


def register(sub: argparse._SubParsersAction[Any]) -> None:
    sh = sub.add_parser(
        "show", help="print the whole of an approval request: arguments, diff, files that run code, action hash",
        description="Print the full canonical arguments of the pending approval (or APPROVAL), a unified diff against "
        "the file as it is now for write_file and apply_patch, a RUNS CODE line for each file that something runs on "
        "its own (conftest.py, Makefile, CI workflows, git hooks, ...) and the action hash an approval binds, "
        "recomputed from those arguments. Reads PostgreSQL; Temporal is asked only for the pending approval.",
    )
    sh.add_argument("run", help="run id")
    sh.add_argument("approval", nargs="?", help="approval id (default: the pending one, else the newest request)")
    add_json(sh)
    sh.set_defaults(func=cmd_show)


async def cmd_show(args: argparse.Namespace) -> int:
    async with stack(need_temporal=False) as (client, store):
        approval = args.approval
        if approval is None:
            view, _source = await run_status(client, store, args.run)
            if view.pending_approval is not None:
                approval = view.pending_approval.approval_id
        shown = approval_view(store, args.run, approval)
        if args.json:
            print_json(shown.as_dict())
        else:
            for line in render_view(shown, list(store.get_run(args.run).spec.approvers)):
                say(line)
    return EXIT_OK
