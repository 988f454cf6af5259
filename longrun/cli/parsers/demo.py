"""`longrun demo`: a forensic review of a sample project, end to end, in under two minutes.

It starts the embedded stack (or reuses it), runs a worker in this process, copies
samples/forensic-demo (a small invoicing library with a planted bug and its tests) to a scratch
workspace, and starts a review with the `scripted` model: a deterministic offline stand-in for a
model, not an LLM, so the demo needs no API key and no network. The context budget is small on
purpose, so compaction happens and shows. The run stops at the approval of its edit; the demo
approves it as `demo-approver`, on your behalf, and says so: the demo registers that principal
and makes its key in `$LONGRUN_HOME/keys/` (the public half in Postgres), and signs the approval
with it, so the worker verifies it like any person's. Then it prints the findings, the
context meter over the run (in the terminal and as an SVG image) and the audit summary with the
hash chains verified.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from longrun.cli.parsers.common import Handler
from longrun.cli.parsers.serve import DEFAULT_PORT  # the console's port, `longrun serve`'s default

REPO = Path(__file__).resolve().parents[3]
DEFAULT_SAMPLE = REPO / "samples" / "forensic-demo"
OBJECTIVE = ("Customers report that invoice totals are too low: some order lines seem to be missing from the "
             "total. Find the defect, propose a fix, and check it with the tests.")
DEMO_BUDGET = 7_800
"""Tokens one request may take. A real window is 200k or more; 7.8k makes the small sample behave
like a long run, so the compaction trigger (75% of the budget, 5.8k) fires a few times. The
budget is set so about 1.3k stays free above the fixed part of every request (system prompt,
17 tool definitions of about 3.6k tokens, the state block): 6k was right for 12 tools, 7.5k for 16
(before `recall`, at 7.5k, one request right after a compaction went over the trigger)."""


def register(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(
        "demo", help="a forensic review of a sample project, end to end (no API key needed)",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--budget", type=int, default=DEMO_BUDGET, help=f"context budget in tokens (default {DEMO_BUDGET})")
    p.add_argument("--sample", default=str(DEFAULT_SAMPLE), help=argparse.SUPPRESS)
    p.add_argument("--objective", default=OBJECTIVE, help=argparse.SUPPRESS)
    p.add_argument("--home", help=argparse.SUPPRESS)
    p.add_argument("--headless", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--console", action="store_true",
                   help="serve the web console and wait for you to approve the edit there, instead of approving it "
                   "on your behalf")
    p.add_argument("--console-port", type=int, default=DEFAULT_PORT, help=argparse.SUPPRESS)
    p.set_defaults(func=Handler("longrun.demo.walkthrough", "cmd_demo"))
