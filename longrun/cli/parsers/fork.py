"""The arguments of `longrun fork`; the handlers are in `longrun.cli.commands.fork`."""

from __future__ import annotations

import argparse
from typing import Any

from longrun.cli.parsers.common import Handler, add_json


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
    f.set_defaults(func=Handler("longrun.cli.commands.fork", "cmd_fork"))
