"""The arguments of `longrun prune, pin, unpin`; the handlers are in `longrun.cli.commands.retention`."""

from __future__ import annotations

import argparse
from typing import Any

from longrun.cli.parsers.common import Handler, add_json


def register(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(
        "prune", help="remove the bodies of finished runs (transcript text, tool output, artifacts), keep their proofs",
        description="Replace the bodies of runs finished before a date by tombstones (sha256 and size): transcript "
        "text, projections, facts' text and the bytes of artifacts no unpruned run links. Every row, hash, state "
        "version, audit event and signed decision stays, so `audit --verify` still passes. Never touches unfinished "
        "or pinned runs, nor a run whose parent is pinned or whose family still runs. One transaction per run: "
        "safe to interrupt and to run again. Needs the schema owner's database URL.",
    )
    when = p.add_mutually_exclusive_group(required=True)
    when.add_argument("--finished-before", metavar="DATE", help="runs finished before this date (YYYY-MM-DD, UTC) "
                      "or time (ISO 8601)")
    when.add_argument("--older-than", metavar="DURATION", help="runs finished longer ago than this (e.g. 90d, 12h)")
    p.add_argument("--dry-run", action="store_true", help="list what would go and the bytes freed; change nothing")
    p.add_argument("--limit", type=int, default=10_000, help="at most this many runs (default 10000)")
    p.add_argument("--export-to", metavar="DIR", help="first write each run's evidence bundle to DIR/RUN.zip (with "
                   "its artifacts' bytes) and verify it; a run whose bundle fails is kept whole")
    add_json(p)
    p.set_defaults(func=Handler("longrun.cli.commands.retention", "cmd_prune"))

    for name, pinned in (("pin", True), ("unpin", False)):
        q = sub.add_parser(name, help="never prune this run" if pinned else "let `prune` take this run again",
                           description=("Pin RUN: `longrun prune` never takes it (nor its subagents). Audited."
                                        if pinned else "Unpin RUN: `longrun prune` may take it once it is old enough. "
                                        "Audited."))
        q.add_argument("run", help="run id")
        add_json(q)
        q.set_defaults(func=Handler("longrun.cli.commands.retention", "cmd_pin"), pinned=pinned)
