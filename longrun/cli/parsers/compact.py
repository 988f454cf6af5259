"""`longrun compact`: offline compaction of an Anthropic-format transcript, no database needed.

    longrun compact TRANSCRIPT.jsonl [--state STATE.json] [--budget TOKENS] [--keep K]
                    [--clear-at-least N] [--exclude-tools a,b] [--json]

Runs the same pipeline as a run does (stages 0-3, extractive summary) and prints the projection
exactly as it would be sent (state block included) with its report. Offline there is no artifact
store: a cleared result references the sha256 of its content, and the report lists them.
"""

from __future__ import annotations

import argparse
from typing import Any

from longrun.cli.parsers.common import Handler


def register(subparsers: argparse._SubParsersAction[Any]) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = subparsers.add_parser("compact", help="compact an Anthropic-format transcript offline",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("transcript", help="JSONL file, one {\"role\", \"content\"} message per line")
    p.add_argument("--state", help="TaskState JSON (or a subset: objective, constraints, next_action, ...)")
    p.add_argument("--budget", type=int, help="most tokens the projection may take (default: 200k window less reserves)")
    p.add_argument("--keep", type=int, help="newest tool uses whose results are never cleared (default 3)")
    p.add_argument("--clear-at-least", type=int, dest="clear_at_least", help="clear only when this many tokens are freed")
    p.add_argument("--exclude-tools", dest="exclude_tools", default="", help="comma list of tools never cleared")
    p.add_argument("--json", action="store_true", help="print one JSON object {messages, report}")
    p.set_defaults(func=Handler("longrun.cli.compact_cmd", "run"))
    return p
