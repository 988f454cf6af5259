"""The `longrun` command line's arguments, one module per group of subcommands (the handlers are
in `longrun.cli.commands`, the module of the same name, plus `compact` and `demo`).

Each module has `register(subparsers)`, which adds its subcommands with `func` set to a
`Handler`: the module and name of the function that runs the command, imported only when it
runs. These modules import nothing but the standard library and each other, so `longrun --help`,
`longrun COMMAND --help` and a usage error never load the store, the Temporal client or the
models (tests/test_cli_parsers.py).
"""

from longrun.cli.parsers import (
    approvers,
    audit,
    budget,
    compact,
    control,
    demo,
    dev,
    diff,
    evidence,
    facts,
    fork,
    retention,
    runs,
    serve,
    show,
)
from longrun.cli.parsers.common import Handler

GROUPS = (dev, runs, fork, control, budget, approvers, show, diff, facts, audit, evidence, retention, serve, compact,
          demo)
"""In `longrun --help`'s order."""

__all__ = ["GROUPS", "Handler"]
