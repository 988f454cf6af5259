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
"""

from longrun.mcp.config import McpDirectory
from longrun.mcp.errors import McpInterrupted, McpNotOffered, McpSecretMissing, McpUnavailable
from longrun.mcp.listing import entries, normalize_schema
from longrun.mcp.registry import RunTools, listing_sha256, mcp_for_approver, mcp_hint_note, with_mcp_tools
from longrun.mcp.secrets import ServerSecrets, resolve

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
