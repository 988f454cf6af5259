"""The arguments of `longrun facts`; the handlers are in `longrun.cli.commands.facts`."""

from __future__ import annotations

import argparse
from typing import Any

from longrun.cli.parsers.common import Handler, add_json

KINDS = ("rule", "decision", "value", "status", "preference")


def register(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(
        "facts", help="list the run's fact store and which current facts the last compaction left out",
        description="List the run's fact store: the current facts by default (--all adds the superseded ones, "
        "marked), each with its kind, who said it, the transcript entry it came from, and whether the last "
        "projection showed it or LEFT OUT (the model can still recall it). Reads PostgreSQL only.",
    )
    p.add_argument("run", help="run id")
    p.add_argument("--kind", choices=KINDS, help="only facts of this kind")
    p.add_argument("--subject", help="only facts whose subject, value or text hold every one of these words")
    p.add_argument("--all", action="store_true", help="include superseded facts, marked with what replaced them")
    add_json(p)
    p.set_defaults(func=Handler("longrun.cli.commands.facts", "cmd_facts"))
