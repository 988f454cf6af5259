"""`longrun dev up|down|status` (the embedded stack) and `longrun worker`."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from longrun.cli.commands.common import EXIT_FAIL, EXIT_OK, print_json, say, settings
from longrun.errors import ConfigError
from longrun.service import devstack
from longrun.telemetry.logs import configure_logging

if TYPE_CHECKING:
    from longrun.providers.registry import ModelProvider


def cmd_up(args: argparse.Namespace) -> int:
    info = devstack.up(temporal_port=args.port, ui_port=args.ui_port, ui=not args.headless)
    if args.json:
        print_json(info.to_dict())
    else:
        say(str(info))
        say("stack ready: start a worker with `longrun worker`, then `longrun start ...`; `longrun dev down` stops it")
    return EXIT_OK


def cmd_status(args: argparse.Namespace) -> int:
    st = devstack.status()
    if args.json:
        print_json(st.to_dict())
    else:
        say(str(st))
        if not st.ok:
            say("the stack is not running: run `longrun dev up`")
    return EXIT_OK if st.ok else EXIT_FAIL


def cmd_down(args: argparse.Namespace) -> int:
    devstack.down()
    if args.json:
        print_json({"stopped": True})
    else:
        say("stack stopped (data kept in $LONGRUN_HOME; `longrun dev up` brings it back)")
    return EXIT_OK


async def cmd_worker(args: argparse.Namespace) -> int:
    import dataclasses

    from longrun.service.worker import run_worker

    configure_logging(args.log_format)
    cfg = settings()
    if args.task_queue:
        cfg = dataclasses.replace(cfg, task_queue=args.task_queue)
    if args.mcp_config:
        from longrun.mcp import config as mcp_config

        cfg = dataclasses.replace(cfg, mcp_servers=mcp_config.load(path=args.mcp_config))
    from longrun.providers.loading import load_providers
    from longrun.tools.loading import load_tools

    tools = [t for reference in args.tools for t in load_tools(reference)]
    providers: dict[str, ModelProvider] = {}
    for reference in args.providers:
        for prefix, provider in load_providers(reference).items():
            if prefix in providers:
                raise ConfigError(f"--providers {reference!r}: prefix {prefix!r} is loaded twice; load each "
                                  "provider once")
            providers[prefix] = provider
    await run_worker(cfg, tools=tools, providers=providers, metrics_port=args.metrics_port,
                     metrics_host=args.metrics_host)
    return EXIT_OK
