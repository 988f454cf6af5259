"""A run's tools: the worker's registry plus the MCP tools its servers listed at its start.

The listing lives in Postgres (an artifact of the run, referenced from its task state by
`LISTING_URI`), so every worker builds the same tools for the run from the same bytes, and the
workflow's history carries none of the servers' text. Registries are cached per (run, listing
hash): a listing never changes once written.

How a server is reached is this worker's configuration (`longrun.mcp.config.McpDirectory`): a
listed tool whose server this worker does not offer is not offered here (workers serving one task
queue should be configured alike).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from longrun.mcp import tools
from longrun.mcp.config import McpDirectory
from longrun.models.mcp import LISTING_URI, McpListing, split_tool_name
from longrun.models.spec import RunSpec
from longrun.models.state import TaskState
from longrun.tools.registry import ToolRegistry

MAX_CACHED = 256


def listing_sha256(state: TaskState) -> str | None:
    """The hash of the run's MCP listing, or None when its tools were not listed (yet)."""
    return next((r.sha256 for r in state.artifact_refs if r.uri == LISTING_URI), None)


def with_mcp_tools(base: ToolRegistry, spec: RunSpec, listing: McpListing, directory: McpDirectory) -> ToolRegistry:
    """`base`'s tools, then the listing's, in listing order, for the servers `directory` offers."""
    servers = {ref.name: directory.resolve(ref) for ref in spec.mcp_servers if directory.refusal(ref) is None}
    registry = ToolRegistry([base.get(n) for n in base.names()])
    for entry in listing.tools:
        server = servers.get(entry.server)
        if server is not None and entry.tool not in registry:
            registry.register(tools.build(server, entry))
    return registry


def mcp_hint_note(listing: McpListing | None, tool: str) -> str:
    """For an approval request of an MCP tool: the server's own annotations, marked as hints
    ('' for any other tool)."""
    entry = listing.entry(tool) if listing is not None else None
    if entry is None:
        return ""
    return (f" [MCP server {entry.server!r} annotates it: {entry.hints.describe()}; server hints only, "
            "never trusted: the run spec alone makes a tool read-only]")


def mcp_for_approver(store: Any, run_id: str, tool: str) -> dict[str, Any] | None:
    """What `longrun show` tells an approver about an MCP tool (None for any other tool)."""
    if split_tool_name(tool) is None:
        return None
    sha = listing_sha256(store.load_state(run_id))
    entry = McpListing.model_validate_json(store.get_artifact(sha)).entry(tool) if sha else None
    if entry is None:
        return None
    return {"tool": entry.name, "server": entry.server, "hints": entry.hints.describe(),
            "description": entry.description}


class RunTools:
    """Per-run listings and registries, built from the stored listing on first use and kept
    (bounded)."""

    def __init__(self, directory: McpDirectory | None = None) -> None:
        self.directory = directory or McpDirectory()
        self._cache: OrderedDict[tuple[str, str], tuple[McpListing, ToolRegistry]] = OrderedDict()
        self._lock = threading.Lock()

    def _built(self, base: ToolRegistry, run_id: str, spec: RunSpec, state: TaskState,
               load: Callable[[str], bytes]) -> tuple[McpListing, ToolRegistry] | None:
        sha = listing_sha256(state) if spec.mcp_servers else None
        if sha is None:
            return None
        key = (run_id, sha)
        with self._lock:
            found = self._cache.get(key)
            if found is not None:
                self._cache.move_to_end(key)
                return found
        listing = McpListing.model_validate_json(load(sha))
        built = (listing, with_mcp_tools(base, spec, listing, self.directory))
        with self._lock:
            self._cache[key] = built
            while len(self._cache) > MAX_CACHED:
                self._cache.popitem(last=False)
        return built

    def registry(self, base: ToolRegistry, run_id: str, spec: RunSpec, state: TaskState,
                 load: Callable[[str], bytes]) -> ToolRegistry:
        """The tools of `run_id`: `base` alone when the spec names no MCP server or nothing was listed."""
        built = self._built(base, run_id, spec, state, load)
        return base if built is None else built[1]

    def listing(self, base: ToolRegistry, run_id: str, spec: RunSpec, state: TaskState,
                load: Callable[[str], bytes]) -> McpListing | None:
        """What the run's servers listed at its start, or None."""
        built = self._built(base, run_id, spec, state, load)
        return None if built is None else built[0]
