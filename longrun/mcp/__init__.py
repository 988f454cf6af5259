"""MCP tool servers behind the gate: listing a run's servers, calling their tools, the secrets
they need (`docs/SECURITY.md`, "MCP trust model").

- `config`: the servers a worker offers, configured on the worker (a run spec only names them);
- `client`: one connection per listing or call, with the official `mcp` SDK (stdio, streamable
  HTTP); failures told apart by whether the call was sent;
- `secrets`: header values and a stdio server's environment, from the worker's environment;
- `listing`: what a server listed, checked (names, schemas) and made safe to show;
- `tools`: a listed tool as a `Tool` (read only when the spec allow-lists it, else an effect
  needing approval);
- `registry`: a run's tools, the worker's plus its listing's;
- `errors`: what went wrong, told apart by what it means for the ledger.

`client` (and with it the SDK, about a second to import) is not imported here: import
`longrun.mcp.client` where a server is called.

The names below load on first use (PEP 562): `longrun.service.settings` reads `config` for every
command, and must not import the registry, the tools and the context pipeline with it
(tests/test_import_cost.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from longrun.lazy_names import lazy_names

if TYPE_CHECKING:
    from longrun.mcp.config import McpDirectory
    from longrun.mcp.errors import McpInterrupted, McpNotOffered, McpSecretMissing, McpUnavailable
    from longrun.mcp.listing import entries, normalize_schema
    from longrun.mcp.registry import RunTools, listing_sha256, mcp_for_approver, mcp_hint_note, with_mcp_tools
    from longrun.mcp.secrets import ServerSecrets, resolve

_WHERE = {
    "McpDirectory": "longrun.mcp.config",
    "McpInterrupted": "longrun.mcp.errors",
    "McpNotOffered": "longrun.mcp.errors",
    "McpSecretMissing": "longrun.mcp.errors",
    "McpUnavailable": "longrun.mcp.errors",
    "RunTools": "longrun.mcp.registry",
    "ServerSecrets": "longrun.mcp.secrets",
    "entries": "longrun.mcp.listing",
    "listing_sha256": "longrun.mcp.registry",
    "mcp_for_approver": "longrun.mcp.registry",
    "mcp_hint_note": "longrun.mcp.registry",
    "normalize_schema": "longrun.mcp.listing",
    "resolve": "longrun.mcp.secrets",
    "with_mcp_tools": "longrun.mcp.registry",
}
"""Each public name's module (see the docstring)."""


__getattr__, __dir__ = lazy_names(__name__, _WHERE, globals())


__all__ = [
    "McpDirectory",
    "McpInterrupted",
    "McpNotOffered",
    "McpSecretMissing",
    "McpUnavailable",
    "RunTools",
    "ServerSecrets",
    "entries",
    "listing_sha256",
    "mcp_for_approver",
    "mcp_hint_note",
    "normalize_schema",
    "resolve",
    "with_mcp_tools",
]
