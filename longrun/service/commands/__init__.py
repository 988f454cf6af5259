"""The `longrun` subcommands, one module per group. Each module has `register(subparsers)`,
which adds its parsers with `func` set to a handler `(args) -> int` (sync or async)."""

from longrun.service.commands import approvers, audit, budget, control, dev, diff, facts, runs, serve, show

GROUPS = (dev, runs, control, budget, approvers, show, diff, facts, audit, serve)

__all__ = ["GROUPS", "approvers", "audit", "budget", "control", "dev", "diff", "facts", "runs", "serve", "show"]
