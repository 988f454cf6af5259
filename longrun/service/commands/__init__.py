"""The `longrun` subcommands, one module per group. Each module has `register(subparsers)`,
which adds its parsers with `func` set to a handler `(args) -> int` (sync or async)."""

from longrun.service.commands import audit, control, dev, runs

GROUPS = (dev, runs, control, audit)

__all__ = ["GROUPS", "audit", "control", "dev", "runs"]
