"""The arguments of `longrun show`; the handlers are in `longrun.cli.commands.show`."""

from __future__ import annotations

import argparse
from typing import Any

from longrun.cli.parsers.common import Handler, add_json


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
    sh.set_defaults(func=Handler("longrun.cli.commands.show", "cmd_show"))
