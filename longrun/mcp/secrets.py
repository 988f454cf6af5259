"""An MCP server's secrets: read from the worker's environment at the moment of use, never stored.

The run spec names environment variables (`headers: {"Authorization": "LOGS_TOKEN"}`); the worker
reads their values only to open a connection. The values are also what `scrub` replaces in
anything a server says back (tool output, error messages, its stderr), so a server that echoes
its credentials does not hand them to the model, the transcript or the audit; the pattern
redactor (`longrun.redact`) runs after it, for secrets of any other origin.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from longrun.mcp.errors import McpSecretMissing
from longrun.models.mcp import McpServer

MIN_SCRUBBED = 4
"""Shorter values are not scrubbed (replacing every `1` would destroy the output, and protect
nothing: a secret that short is not one)."""
REPLACEMENT = "[REDACTED:mcp_secret]"


@dataclass(frozen=True)
class ServerSecrets:
    headers: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)

    def scrub(self, text: str) -> str:
        """`text` with every secret value of this server replaced, longest first."""
        values = sorted({v for v in (*self.headers.values(), *self.env.values()) if len(v) >= MIN_SCRUBBED},
                        key=len, reverse=True)
        for value in values:
            text = text.replace(value, REPLACEMENT)
            # a bearer token travels inside a header value: scrub the token alone too
            _, _, token = value.partition(" ")
            if len(token) >= MIN_SCRUBBED:
                text = text.replace(token, REPLACEMENT)
        return text


def missing(server: McpServer, environ: Mapping[str, str] | None = None) -> list[str]:
    """The variables `server` needs that the worker's environment does not set."""
    environ = os.environ if environ is None else environ
    return sorted({var for var in (*server.headers.values(), *server.env.values()) if var not in environ})


def resolve(server: McpServer, environ: Mapping[str, str] | None = None) -> ServerSecrets:
    """The server's header values and environment, from the worker's environment.

    Raises:
        McpSecretMissing: a named variable is not set (the message names it, never a value).
    """
    environ = os.environ if environ is None else environ
    absent = missing(server, environ)
    if absent:
        raise McpSecretMissing(
            f"MCP server {server.name!r} needs {', '.join(absent)} in the worker's environment; set it where the "
            "worker runs and start the worker again"
        )
    return ServerSecrets(
        headers={name: environ[var] for name, var in server.headers.items()},
        env={name: environ[var] for name, var in server.env.items()},
    )
