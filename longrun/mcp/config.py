"""The MCP servers a worker offers: configured on the worker, by name. A run spec only names them.

Whoever may start a run must not choose what a worker executes or connects to: a `stdio` server
is a process the worker starts outside the sandbox, before any approval, and an `http` server gets
the worker's credentials in its headers. So the command, the URL and the secrets' variable names
are the operator's, read here from the worker's environment when it starts:

    LONGRUN_MCP_CONFIG=/etc/longrun/mcp.toml       a file of servers (TOML or JSON, by its suffix)
    LONGRUN_MCP_<NAME>='stdio:COMMAND ARGS'         one server: its argv, split like a shell would
    LONGRUN_MCP_<NAME>='http:https://host/mcp'      one server: a streamable HTTP endpoint
    LONGRUN_MCP_<NAME>__ENV='VAR=WORKER_VAR,...'    a stdio server's variables, from the worker's
    LONGRUN_MCP_<NAME>__HEADERS='Header=WORKER_VAR' an http server's headers, from the worker's
    LONGRUN_MCP_<NAME>__TIMEOUT=30                  seconds per connection and call (default 60)

The file (`longrun worker --mcp-config PATH` names one too) maps names to `McpServerConfig` fields:

    [servers.logs]
    transport = "stdio"
    command = ["python", "-m", "logs_server"]
    env = { LOGS_KEY = "LOGS_KEY" }

`<NAME>` is the server's name upper-cased; the double underscore cannot occur in a name, so each
variable means one thing. A variable overrides the file's entry of the same name.
"""

from __future__ import annotations

import json
import os
import shlex
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from longrun.errors import ConfigError
from longrun.mcp.errors import McpNotOffered
from longrun.models.mcp import McpServer, McpServerConfig, McpServerRef, env_variable, inline_refusal

PREFIX = "LONGRUN_MCP_"
FILE_VARIABLE = "LONGRUN_MCP_CONFIG"
SUFFIXES = {"ENV": "env", "HEADERS": "headers", "TIMEOUT": "timeout_seconds"}
def how_to_configure(name: str = "<NAME>") -> str:
    """How an operator makes a worker offer server `name`."""
    return (f"configure it on the worker with {PREFIX}{name.upper()}='stdio:COMMAND ARGS' or 'http:URL', or in the "
            f"file {FILE_VARIABLE} (or `longrun worker --mcp-config PATH`) names, then restart the worker")


def _problems(exc: ValidationError) -> str:
    return "; ".join(str(e["msg"]).removeprefix("Value error, ") for e in exc.errors())


def _target(variable: str, name: str, value: str) -> dict[str, Any]:
    kind, _, rest = value.partition(":")
    if kind == "stdio":
        try:
            return {"name": name, "transport": "stdio", "command": shlex.split(rest)}
        except ValueError as exc:
            raise ConfigError(f"{variable}: {exc}") from None
    if kind == "http":
        return {"name": name, "transport": "http", "url": rest.strip()}
    raise ConfigError(f"{variable} must be 'stdio:COMMAND ARGS' or 'http:URL'")


def _pairs(variable: str, value: str) -> dict[str, str]:
    pairs = {}
    for item in (i.strip() for i in value.split(",") if i.strip()):
        key, found, source = item.partition("=")
        if not found or not key.strip() or not source.strip():
            raise ConfigError(f"{variable}: expected NAME=WORKER_VARIABLE[,...], got {item!r}")
        pairs[key.strip()] = source.strip()
    return pairs


def from_variables(environ: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """Server entries from `LONGRUN_MCP_<NAME>` and its `__ENV`/`__HEADERS`/`__TIMEOUT` variables.

    Raises:
        ConfigError: a malformed value, or a suffix variable for a server no variable defines.
    """
    entries: dict[str, dict[str, Any]] = {}
    extras: list[tuple[str, str, str, str]] = []
    for variable, value in sorted(environ.items()):
        if not variable.startswith(PREFIX) or variable == FILE_VARIABLE:
            continue
        rest = variable[len(PREFIX):]
        base, sep, suffix = rest.partition("__")
        name = base.lower()
        if sep:
            if suffix not in SUFFIXES:
                raise ConfigError(f"{variable}: unknown setting {suffix!r}; use one of "
                                  f"{', '.join(PREFIX + base + '__' + s for s in SUFFIXES)}")
            extras.append((variable, name, SUFFIXES[suffix], value))
        else:
            entries[name] = _target(variable, name, value)
    for variable, name, key, value in extras:
        if name not in entries:
            raise ConfigError(f"{variable} configures MCP server {name!r}, but {env_variable(name)} does not define it")
        if key == "timeout_seconds":
            entries[name][key] = value.strip()
        else:
            entries[name][key] = _pairs(variable, value)
    return entries


def from_file(path: Path) -> dict[str, dict[str, Any]]:
    """Server entries from a TOML or JSON file: `{"servers": {NAME: {fields}}}`.

    Raises:
        ConfigError: the file cannot be read or parsed, or is not shaped like that.
    """
    try:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text) if path.suffix.lower() == ".json" else tomllib.loads(text)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"MCP server configuration {path}: {exc}") from None
    servers = data.get("servers") if isinstance(data, dict) else None
    if not isinstance(servers, dict) or not all(isinstance(v, dict) for v in servers.values()):
        raise ConfigError(f"MCP server configuration {path}: expected a table `servers` of servers by name, e.g. "
                          '[servers.logs] transport = "stdio" command = ["python", "-m", "logs_server"]')
    return {str(name): {**entry, "name": str(name)} for name, entry in servers.items()}


def load(environ: Mapping[str, str] | None = None, path: str | Path | None = None) -> tuple[McpServerConfig, ...]:
    """The servers a worker offers: the file (`path`, else `$LONGRUN_MCP_CONFIG`), then the
    variables, which win over the file's entry of the same name.

    Raises:
        ConfigError: what is wrong, and with which variable or file.
    """
    environ = os.environ if environ is None else environ
    path = path or environ.get(FILE_VARIABLE) or None
    entries = from_file(Path(path)) if path else {}
    entries.update(from_variables(environ))
    servers = []
    for name, entry in sorted(entries.items()):
        if name == "config":
            raise ConfigError(f"an MCP server may not be named 'config': {FILE_VARIABLE} names the configuration file")
        try:
            servers.append(McpServerConfig.model_validate(entry))
        except ValidationError as exc:
            raise ConfigError(f"MCP server {name!r} ({env_variable(name)} or {path or FILE_VARIABLE}): "
                              f"{_problems(exc)}") from None
    return tuple(servers)


class McpDirectory:
    """The servers this worker offers, by name, and the refusal for any other name."""

    def __init__(self, servers: Iterable[McpServerConfig] = ()) -> None:
        self._servers = {s.name: s for s in servers}

    def names(self) -> list[str]:
        return sorted(self._servers)

    def offers(self, name: str) -> bool:
        return name in self._servers

    def refusal(self, ref: McpServerRef) -> str | None:
        """Why this worker will not list or call `ref`'s server (None: it offers it)."""
        if ref.inline:
            return "this worker offers no MCP server a run spec defines; nothing was started. " + inline_refusal(ref.name)
        if ref.name in self._servers:
            return None
        offered = f"it offers: {', '.join(self.names())}" if self._servers else "it offers none"
        return f"this worker does not offer MCP server {ref.name!r} ({offered}); {how_to_configure(ref.name)}"

    def resolve(self, ref: McpServerRef) -> McpServer:
        """`ref`'s server as this worker configures it, with the run's declarations.

        Raises:
            McpNotOffered: the worker does not offer it (or the spec defined it in place).
        """
        why = self.refusal(ref)
        if why is not None:
            raise McpNotOffered(why)
        return self._servers[ref.name].for_run(ref)
