"""`longrun serve`: the console (JSON API and web pages) on 127.0.0.1:8780 by default.

It uses the CLI's settings: the database URL (the app role's is enough) and the Temporal address
from the environment or `$LONGRUN_HOME/stack.json`. People sign in with a console password that
`longrun approvers add NAME --console` sets (docs/API.md).

Session rows are signed with the console's own key (`longrun.console.session_mac`):
`LONGRUN_CONSOLE_SECRET`, else `$LONGRUN_HOME/console-session.key`, made here on first start. Every
console process serving the same people needs the same one; no worker may read it.
"""

from __future__ import annotations

import argparse
import os

from longrun.cli.commands.common import EXIT_OK, CliError, open_store_only, say, settings
from longrun.telemetry.logs import configure_logging


def cmd_serve(args: argparse.Namespace) -> int:
    """Runs uvicorn's own loop (uvloop where installed), not inside another: under load the C
    event loop and HTTP parser keep the console's tail latency down (bench/console_load.py)."""
    import uvicorn

    from longrun.console import SESSION_KEY_FILE, SESSION_SECRET_VARIABLE, Console, create_app

    if not 0 < args.port < 65536:
        raise CliError("--port must be between 1 and 65535", code=2)
    configure_logging(args.log_format)
    store = open_store_only()
    console = Console(settings=settings(), store=store, session_hours=args.session_hours,
                      secure_cookies=args.secure_cookies)
    # JSON logs: uvicorn keeps its hands off logging, so its lines reach the JSON handler too
    config = uvicorn.Config(create_app(console), host=args.host, port=args.port, log_level="warning",
                            proxy_headers=False, server_header=False,
                            log_config=None if args.log_format == "json" else uvicorn.config.LOGGING_CONFIG)
    server = uvicorn.Server(config)
    say(f"longrun console on http://{args.host}:{args.port} (sign in with a console password: "
        "`longrun approvers add NAME --console`); Ctrl-C stops it")
    say(f"sessions are signed with {SESSION_SECRET_VARIABLE}" if os.environ.get(SESSION_SECRET_VARIABLE) else
        f"sessions are signed with {console.settings.home / SESSION_KEY_FILE} (every console process needs the same key)")
    try:
        server.run()
    finally:
        console.derivations.close()
        store.engine.dispose()
    return EXIT_OK
