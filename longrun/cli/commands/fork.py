"""`longrun fork RUN --at VERSION | --at-turn N`: a new run from another's state at one version
(rules: `longrun.client.fork`; docs/OPERATIONS.md, Fork)."""

from __future__ import annotations

import argparse
import getpass
import sys
from typing import Any

from longrun.cli.commands.common import EXIT_OK, CliError, add_json, print_json, say, settings, stack
from longrun.client.fork import ForkRefused, ForkRequest, fork_run


def register(sub: argparse._SubParsersAction[Any]) -> None:
    f = sub.add_parser(
        "fork", help="start a new run from another run's state at one version",
        description="Start a new run whose task state is RUN's at a state version (approvals, standing approvals "
        "and pending requests dropped; settled effects kept as history, not as approval; constraints verbatim), "
        "whose transcript is RUN's up to that point (by reference), and which, on git, works on its own branch "
        "from the commit RUN's branch had then. Prints the new run's id.",
    )
    f.add_argument("run", help="the run to fork (a fork may be forked too)")
    where = f.add_mutually_exclusive_group(required=True)
    where.add_argument("--at", type=int, metavar="VERSION", dest="at_version",
                       help="the state version to start from (`longrun audit RUN` lists them)")
    where.add_argument("--at-turn", type=int, metavar="N", dest="at_turn",
                       help="after N model turns: the state when the next model request was made")
    f.add_argument("--model", help="the fork's model (default: RUN's)")
    f.add_argument("--objective", help="a new objective (the constraints stay)")
    f.add_argument("--say", metavar="TEXT", help="a user message the fork's model reads first")
    f.add_argument("--workspace", metavar="DIR",
                   help="only for a run that edited its folder in place: a fresh copy or git worktree for the fork "
                   "(never RUN's own folder)")
    f.add_argument("--task-queue", help="task queue of the workers (default $LONGRUN_TASK_QUEUE, else 'longrun')")
    f.add_argument("--run-id", help=argparse.SUPPRESS)
    add_json(f)
    f.set_defaults(func=cmd_fork)


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
