"""The `longrun start` flags that name a run's MCP servers (docs/CLI.md, "MCP servers").

    --mcp NAME                   a server the workers offer (configured on the worker:
                                 LONGRUN_MCP_<NAME> or LONGRUN_MCP_CONFIG, longrun.mcp.config)
    --mcp-read-only NAME:TOOL    runs without approval (every other MCP tool needs one)
    --mcp-idempotent NAME:TOOL   may run again after an interrupted call

A run names servers; it never says what a worker starts or where it connects, so starting a run
never runs code on a worker. The old `--mcp NAME=stdio:CMD` / `NAME=http:URL`, `--mcp-env` and
`--mcp-header` are refused with how to configure the server on the worker instead.

The flags themselves are declared with the rest of `start`'s (`longrun.cli.parsers.runs`), which
imports no model; this module reads what they say.
"""

from __future__ import annotations

import argparse
from collections.abc import Collection
from typing import Any

from longrun.mcp.config import how_to_configure
from longrun.models.mcp import env_variable, inline_refusal


def _split(flag: str, raw: str, sep: str) -> tuple[str, str]:
    name, found, rest = raw.partition(sep)
    if not found or not name or not rest:
        raise ValueError(f"{flag} {raw!r}: expected NAME{sep}...")
    return name.strip(), rest.strip()


def servers(args: argparse.Namespace, offered: Collection[str] | None = None) -> list[dict[str, Any]]:
    """The `RunSpec.mcp_servers` entries the flags describe (validated by the spec model).

    Args:
        offered: the servers the workers offer, when this machine can see their configuration
            (then any other name is refused here); None: only the workers can tell.

    Raises:
        ValueError: a malformed flag, a server defined on the command line, or a name no --mcp
            declares or (with `offered`) the workers do not offer.
    """
    for flag, values, what in (("--mcp-env", args.mcp_env, "environment"), ("--mcp-header", args.mcp_header,
                                                                             "headers")):
        for raw in values:
            name = raw.partition(":")[0].strip() or "NAME"
            raise ValueError(f"{flag} {raw!r}: a server's {what} is configured on the worker, not in a run "
                             f"({env_variable(name)}__{'ENV' if what == 'environment' else 'HEADERS'}, or its entry "
                             "in LONGRUN_MCP_CONFIG)")
    found: dict[str, dict[str, Any]] = {}
    for raw in args.mcp:
        name, sep, target = raw.partition("=")
        name = name.strip()
        if sep or target:
            raise ValueError(f"--mcp {raw!r}: {inline_refusal(name or 'NAME')}")
        if name in found:
            raise ValueError(f"--mcp {raw!r}: server {name!r} is named twice")
        if offered is not None and name not in offered:
            listed = ", ".join(sorted(offered)) or "none"
            raise ValueError(f"--mcp {name}: the workers' configuration seen here offers no MCP server {name!r} "
                             f"(it offers: {listed}); {how_to_configure(name)}")
        found[name] = {"name": name}

    def server(flag: str, name: str) -> dict[str, Any]:
        if name not in found:
            raise ValueError(f"{flag}: no --mcp names a server {name!r}")
        return found[name]

    for flag, values, key in (("--mcp-read-only", args.mcp_read_only, "read_only_tools"),
                              ("--mcp-idempotent", args.mcp_idempotent, "idempotent_tools")):
        for raw in values:
            name, tool = _split(flag, raw, ":")
            server(flag, name).setdefault(key, []).append(tool)
    return list(found.values())
