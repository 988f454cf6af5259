"""`longrun raise-budget`: answer a run's budget request, signed (a raise, or `--reject`)."""

from __future__ import annotations

import argparse
from typing import Any

from longrun.cli.commands.common import (
    EXIT_OK,
    CliError,
    add_json,
    add_signer_args,
    print_json,
    say,
    stack,
    usage_error,
)
from longrun.client.budget_decide import decide_budget
from longrun.errors import ApprovalError


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
    rb.set_defaults(func=cmd_raise_budget)


async def cmd_raise_budget(args: argparse.Namespace) -> int:
    if args.reject == (args.by is not None):
        raise usage_error("give either --by USD (raise the budget) or --reject (end the run)")
    if args.by is not None and not 0.01 <= args.by <= 1_000_000:
        raise usage_error("--by takes US dollars from 0.01 to 1000000")
    async with stack() as (client, store):
        assert client is not None
        store.get_run(args.run)  # RunNotFoundError: unknown run id
        try:
            message = await decide_budget(client, args.run, args.approver, by_usd=args.by or 0.0, reject=args.reject,
                                          reason=args.reason, store=store, key_path=args.key)
        except ApprovalError as exc:
            raise CliError(f"raise-budget refused: {exc}") from exc
    if args.json:
        print_json({"run_id": args.run, "result": message})
    else:
        say(message)
    return EXIT_OK
