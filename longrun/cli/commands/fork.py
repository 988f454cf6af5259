"""`longrun fork RUN --at VERSION | --at-turn N`: a new run from another's state at one version
(rules: `longrun.client.fork`; docs/OPERATIONS.md, Fork)."""

from __future__ import annotations

import argparse
import getpass
import sys

from longrun.cli.commands.common import EXIT_OK, CliError, print_json, say, settings, stack
from longrun.client.fork import ForkRefused, ForkRequest, fork_run


async def cmd_fork(args: argparse.Namespace) -> int:
    req = ForkRequest(run_id=args.run, at_version=args.at_version, at_turn=args.at_turn, model=args.model,
                      objective=args.objective, say=args.say, workspace=args.workspace)
    queue = args.task_queue or settings().task_queue
    async with stack() as (client, store):
        assert client is not None
        try:
            new_id = await fork_run(client, store, req, task_queue=queue, actor=getpass.getuser(), run_id=args.run_id)
        except ForkRefused as exc:
            raise CliError(str(exc)) from exc
        point = store.lineage(new_id)
        assert point is not None
    if args.json:
        print_json({"run_id": new_id, "forked_from": {"run_id": point.parent_run_id, "version": point.parent_version,
                                                      "through_seq": point.parent_through_seq,
                                                      "commit": point.parent_commit}})
        return EXIT_OK
    say(new_id)
    on = f"; its branch longrun/{new_id} starts at {point.parent_commit[:12]}" if point.parent_commit else ""
    print(f"forked from {point.parent_run_id} at state v{point.parent_version} (transcript through entry "
          f"{point.parent_through_seq}){on}; follow it: longrun watch {new_id}", file=sys.stderr)
    return EXIT_OK
