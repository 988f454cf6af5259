"""The `longrun` subcommands, one module per group. Each module has `register(subparsers)`,
which adds its parsers with `func` set to a handler `(args) -> int` (sync or async)."""

from longrun.cli.commands import approvers, audit, control, dev, diff, facts, runs, serve, show

GROUPS = (dev, runs, control, approvers, show, diff, facts, audit, serve)

__all__ = ["GROUPS", "approvers", "audit", "control", "dev", "diff", "facts", "runs", "serve", "show"]
