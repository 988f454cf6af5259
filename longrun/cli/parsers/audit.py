"""The arguments of `longrun audit, usage`; the handlers are in `longrun.cli.commands.audit`."""

from __future__ import annotations

import argparse
from typing import Any

from longrun.cli.parsers.common import Handler, add_json


def register(sub: argparse._SubParsersAction[Any]) -> None:
    a = sub.add_parser(
        "audit", help="the full timeline of a run, from PostgreSQL alone",
        description="Every transcript entry, state version and audit event (gate verdicts, approvals, effects, "
        "compactions, ...) in time order, read from PostgreSQL only: it stays complete after Temporal deletes "
        "the workflow. --verify checks the three hash chains and re-verifies every signed decision against "
        "the keys registered when it was made, and exits 1 naming each bad row.",
    )
    a.add_argument("run", help="run id")
    a.add_argument("--verify", action="store_true",
                   help="check the hash chains and every decision's signature; exit 1 naming each bad row")
    a.add_argument("--format", choices=("table", "jsonl"), default="table",
                   help="table (default) or jsonl: one JSON object per row, then a summary object")
    a.add_argument("--json", action="store_true", help="one JSON object: {timeline, summary, verify}")
    a.set_defaults(func=Handler("longrun.cli.commands.audit", "cmd_audit"))

    u = sub.add_parser(
        "usage", help="tokens per model request: input, cache and output; estimated vs calibrated",
        description="One row per model request (from the run's model_called events): input, cache write, cache "
        "read and output tokens as the provider reported them, and the request size the context pipeline "
        "estimated and calibrated before sending it.",
    )
    u.add_argument("run", help="run id")
    u.add_argument("--csv", action="store_true", help="CSV on stdout")
    add_json(u)
    u.set_defaults(func=Handler("longrun.cli.commands.audit", "cmd_usage"))
