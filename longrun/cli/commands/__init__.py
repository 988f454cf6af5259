"""The `longrun` subcommands, one module per group. Each module has `register(subparsers)`,
which adds its parsers with `func` set to a handler `(args) -> int` (sync or async)."""

from longrun.cli.commands import (
    approvers,
    audit,
    budget,
    control,
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

GROUPS = (dev, runs, fork, control, budget, approvers, show, diff, facts, audit, evidence, retention, serve)

__all__ = [
    "GROUPS", "approvers", "audit", "budget", "control", "dev", "diff", "evidence", "facts", "fork", "retention", "runs", "serve",
    "show",
]
