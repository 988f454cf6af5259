"""`longrun show RUN [APPROVAL]`: the whole of what an approval would approve.

`status` and `watch` show a pending approval's arguments cut at 300 characters; this prints the
call's full canonical arguments from PostgreSQL, a unified diff against the file as it is now for
`write_file` and `apply_patch`, the files among them that run code, and the action hash the
approval binds, recomputed from those arguments (`longrun.client.approval_view`)."""

from __future__ import annotations

import argparse

from longrun.cli.commands.common import EXIT_OK, print_json, say, stack
from longrun.client.approval_view import approval_view, render_view
from longrun.client.status import run_status


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
