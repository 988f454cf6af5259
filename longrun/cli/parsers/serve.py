"""The arguments of `longrun serve`; the handlers are in `longrun.cli.commands.serve`."""

from __future__ import annotations

import argparse
from typing import Any

from longrun.cli.parsers.common import Handler, add_log_format

DEFAULT_HOST, DEFAULT_PORT = "127.0.0.1", 8780


def register(sub: argparse._SubParsersAction[Any]) -> None:
    sp = sub.add_parser("serve", help="the web console and JSON API (default http://127.0.0.1:8780)",
                        description="Serve the longrun console: an inbox of pending approvals with diffs, runs, "
                        "run pages that update live, and the audit; plus the JSON API (docs/API.md, /api/docs). "
                        "Sign in with a console password (`longrun approvers add NAME --console`).")
    sp.add_argument("--host", default=DEFAULT_HOST, help=f"address to listen on (default {DEFAULT_HOST}; "
                    "anything else exposes the console to the network: put TLS in front)")
    sp.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    sp.add_argument("--session-hours", type=float, default=8.0, help="how long a sign-in lasts (default 8)")
    sp.add_argument("--secure-cookies", action="store_true",
                    help="mark the session cookie Secure (when a TLS proxy serves the console)")
    add_log_format(sp)
    sp.set_defaults(func=Handler("longrun.cli.commands.serve", "cmd_serve"))
