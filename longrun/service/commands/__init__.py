"""The `longrun` subcommands, one module per group. Each module has `register(subparsers)`,
which adds its parsers with `func` set to a handler `(args) -> int` (sync or async)."""

from longrun.service.commands import approvers, audit, control, dev, diff, facts, retention, runs, serve, show

GROUPS = (dev, runs, control, approvers, show, diff, facts, audit, retention, serve)

__all__ = ["GROUPS", "approvers", "audit", "control", "dev", "diff", "facts", "retention", "runs", "serve", "show"]
