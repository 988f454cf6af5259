"""The `longrun start` flags that put MCP servers in a run spec (docs/CLI.md, "MCP servers").

    --mcp NAME=stdio:COMMAND ARGS      a server the worker starts (argv split like a shell would)
    --mcp NAME=http:URL                a streamable HTTP server
    --mcp-header NAME:HEADER=ENV_VAR   an HTTP header whose value is the worker's $ENV_VAR
    --mcp-env NAME:VAR=ENV_VAR         a stdio server's $VAR, from the worker's $ENV_VAR
    --mcp-read-only NAME:TOOL          runs without approval (every other MCP tool needs one)
    --mcp-idempotent NAME:TOOL         may run again after an interrupted call

Values of secrets never appear on the command line or in the spec: only variable names.
"""

from __future__ import annotations

import argparse
import shlex
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--mcp", action="append", default=[], metavar="NAME=stdio:CMD ARGS|NAME=http:URL",
                        help="an MCP tool server (repeatable); its tools appear as mcp__NAME__TOOL, each an effect "
                        "needing approval unless --mcp-read-only names it")
    parser.add_argument("--mcp-header", action="append", default=[], metavar="NAME:HEADER=ENV_VAR",
                        help="an HTTP header of server NAME, its value read from the worker's $ENV_VAR (repeatable)")
    parser.add_argument("--mcp-env", action="append", default=[], metavar="NAME:VAR=ENV_VAR",
                        help="an environment variable of stdio server NAME, from the worker's $ENV_VAR (repeatable)")
    parser.add_argument("--mcp-read-only", action="append", default=[], metavar="NAME:TOOL",
                        help="declare a tool read-only: it runs without approval (the server's own readOnlyHint "
                        "is never trusted for this)")
    parser.add_argument("--mcp-idempotent", action="append", default=[], metavar="NAME:TOOL",
                        help="declare an effect tool safe to run twice: an interrupted call may run again instead "
                        "of going to a human")


def _split(flag: str, raw: str, sep: str) -> tuple[str, str]:
    name, found, rest = raw.partition(sep)
    if not found or not name or not rest:
        raise ValueError(f"{flag} {raw!r}: expected NAME{sep}...")
    return name.strip(), rest.strip()


def servers(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The `RunSpec.mcp_servers` entries the flags describe (validated by the spec model).

    Raises:
        ValueError: a malformed flag, or one naming a server no --mcp declares.
    """
    found: dict[str, dict[str, Any]] = {}
    for raw in args.mcp:
        name, target = _split("--mcp", raw, "=")
        kind, _, rest = target.partition(":")
        if name in found:
            raise ValueError(f"--mcp {raw!r}: server {name!r} is declared twice")
        if kind == "stdio":
            try:
                argv = shlex.split(rest)
            except ValueError as exc:
                raise ValueError(f"--mcp {raw!r}: {exc}") from exc
            found[name] = {"name": name, "transport": "stdio", "command": argv}
        elif kind == "http":
            found[name] = {"name": name, "transport": "http", "url": rest}
        else:
            raise ValueError(f"--mcp {raw!r}: expected NAME=stdio:COMMAND ARGS or NAME=http:URL")

    def server(flag: str, name: str) -> dict[str, Any]:
        if name not in found:
            raise ValueError(f"{flag}: no --mcp declares a server named {name!r}")
        return found[name]

    for flag, values, key in (("--mcp-header", args.mcp_header, "headers"), ("--mcp-env", args.mcp_env, "env")):
        for raw in values:
            name, pair = _split(flag, raw, ":")
            var, _, source = pair.partition("=")
            if not var or not source:
                raise ValueError(f"{flag} {raw!r}: expected NAME:{'HEADER' if key == 'headers' else 'VAR'}=ENV_VAR")
            server(flag, name).setdefault(key, {})[var] = source
    for flag, values, key in (("--mcp-read-only", args.mcp_read_only, "read_only_tools"),
                              ("--mcp-idempotent", args.mcp_idempotent, "idempotent_tools")):
        for raw in values:
            name, tool = _split(flag, raw, ":")
            server(flag, name).setdefault(key, []).append(tool)
    return list(found.values())


def secret_variables(spec_servers: list[Any]) -> list[str]:
    """Every worker environment variable the servers name."""
    return sorted({var for s in spec_servers for var in (*s.headers.values(), *s.env.values())})
