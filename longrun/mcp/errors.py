"""The MCP errors, told apart by what they mean for an effect's ledger (see `client`):

    ToolError (longrun.errors)
    ├── McpNotOffered      the run names a server this worker does not offer (or defines one in place)
    ├── McpSecretMissing   a variable the server's configuration names is not set in the worker's environment
    ├── McpUnavailable     the server was not reached or set up: no call was sent, nothing ran
    └── McpInterrupted     a call was sent and no well-formed answer came back: outcome unknown

Kept apart from `client` so that importing them does not import the SDK (a second on a CLI).
"""

from __future__ import annotations

from longrun.errors import ToolError


class McpNotOffered(ToolError):
    """The run names an MCP server this worker does not offer: nothing is started or connected to."""


class McpSecretMissing(ToolError):
    """A variable the server's configuration names is not set in the worker's environment."""


class McpUnavailable(ToolError):
    """The server could not be reached or set up; no call was sent to it."""


class McpInterrupted(ToolError):
    """A call was sent and no well-formed answer came back (crash, timeout, malformed result)."""
