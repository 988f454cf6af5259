"""The arguments of `longrun raise-budget`; the handlers are in `longrun.cli.commands.budget`."""

from __future__ import annotations

import argparse
from typing import Any

from longrun.cli.parsers.common import Handler, add_json, add_signer_args


def register(sub: argparse._SubParsersAction[Any]) -> None:
    rb = sub.add_parser("raise-budget", help="raise the budget of a run that reached its --max-cost (or end it)",
                        description="A run that reached its --max-cost waits for a human (a `budget` request in "
                        "`status` and the inbox). Raise its family's budget by --by US dollars and it goes on, or "
                        "--reject to end it. The decision is signed with your key (--as NAME reads "
                        "$LONGRUN_HOME/keys/NAME.pem, or --key), verified by the worker and audited.")
    rb.add_argument("run", help="run id")
    add_signer_args(rb)
    rb.add_argument("--by", type=float, metavar="USD", help="dollars to add to the budget (e.g. 5)")
    rb.add_argument("--reject", action="store_true", help="do not raise it: the run ends (cancelled)")
    rb.add_argument("--reason", default="", help="why (kept in the audit)")
    add_json(rb)
    rb.set_defaults(func=Handler("longrun.cli.commands.budget", "cmd_raise_budget"))
