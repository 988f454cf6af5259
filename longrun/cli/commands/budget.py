"""`longrun raise-budget`: answer a run's budget request, signed (a raise, or `--reject`)."""

from __future__ import annotations

import argparse

from longrun.cli.commands.common import (
    EXIT_OK,
    CliError,
    print_json,
    say,
    stack,
    usage_error,
)
from longrun.client.budget_decide import decide_budget
from longrun.errors import ApprovalError


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
