"""The arguments of `longrun diff`; the handlers are in `longrun.cli.commands.diff`."""

from __future__ import annotations

import argparse
from typing import Any

from longrun.cli.parsers.common import Handler, add_json


def register(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(
        "diff", help="show a run's change set (its git branch): a patch on stdout, or --stat",
        description="Print the change set of a run on a git workspace: `git diff BASE longrun/RUN` as a patch on "
        "stdout (pipe it to `git apply`), or with --stat the branch, its commits (one per confirmed edit, with "
        "the approval in its trailers) and the files changed. A run that worked in place has no change set.",
    )
    p.add_argument("run", help="run id")
    p.add_argument("--stat", action="store_true", help="the branch, its commits and a summary per file, not the patch")
    add_json(p)
    p.set_defaults(func=Handler("longrun.cli.commands.diff", "cmd_diff"))
