"""From what a server listed to what the run offers: names, schemas and descriptions checked.

A listed tool is offered only when the gate can treat it like a built-in: its name fits
`mcp__SERVER__TOOL` within the 64 characters a model API accepts, and its input schema uses the
keywords longrun's validator implements (`longrun.tools.schema`), after two harmless rewrites
servers commonly need (`anyOf` of plain types becomes a `type` list, as pydantic writes an
optional argument; `additionalProperties` absent stays "no extra keys", as for the built-ins).
Anything else is skipped with its reason, audited, so a person can see why a tool is missing.

Descriptions are the server's text. They are redacted, capped, and prefixed with a line that says
whose text it is and what a call needs (approval or not), so the model reads them as the server's
claims, not as the user's instructions. Nothing in them can change what the gate decides.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from longrun.models.mcp import McpHints, McpListing, McpServer, McpSkipped, McpToolEntry, mcp_tool_name
from longrun.redact import Redactor
from longrun.tools.schema import check_schema

MAX_DESCRIPTION = 4_000
TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")


def _plain_types(branches: list[Any]) -> list[str] | None:
    types: list[str] = []
    for branch in branches:
        if not isinstance(branch, dict) or set(branch) - {"type", "title", "description"}:
            return None
        t = branch.get("type")
        if not isinstance(t, str):
            return None
        types.append(t)
    return types


def normalize_schema(schema: Any) -> dict[str, Any]:
    """A copy of `schema` in the validator's subset.

    Raises:
        ValueError: a keyword the validator does not implement remains (the message names it).
    """
    if not isinstance(schema, dict):
        raise ValueError("the input schema is not an object")
    out = copy.deepcopy(schema)

    def walk(node: dict[str, Any]) -> None:
        if "anyOf" in node and "type" not in node:
            types = _plain_types(node["anyOf"]) if isinstance(node["anyOf"], list) else None
            if types is not None:
                del node["anyOf"]
                node["type"] = types
        for sub in (node.get("properties") or {}).values():
            if isinstance(sub, dict):
                walk(sub)
        if isinstance(node.get("items"), dict):
            walk(node["items"])

    walk(out)
    if out.get("type") != "object":
        raise ValueError("the input schema's type is not 'object'")
    check_schema(out)
    return out


def entries(server: McpServer, listed: list[Any], redactor: Redactor,
            scrub: Any = lambda s: s) -> McpListing:
    """The tools of one server's listing that the run offers, and the skipped ones with why.

    Args:
        listed: the SDK's `Tool` models, as the server sent them.
        scrub: replaces the server's own secrets in its text (`ServerSecrets.scrub`).
    """
    listing = McpListing()
    seen: set[str] = set()
    for tool in listed:
        name = str(getattr(tool, "name", ""))
        full = mcp_tool_name(server.name, name)
        if not TOOL_NAME.fullmatch(name) or not TOOL_NAME.fullmatch(full):
            listing.skipped.append(McpSkipped(server=server.name, name=name[:100],
                                              reason=f"{full[:100]!r} is not a valid tool name (letters, digits, _ "
                                                     "and -, at most 64 characters with the mcp__SERVER__ prefix)"))
            continue
        if name in seen:
            listing.skipped.append(McpSkipped(server=server.name, name=name, reason="listed twice"))
            continue
        seen.add(name)
        try:
            schema = normalize_schema(getattr(tool, "input_schema", None))
        except (ValueError, re.error) as exc:
            listing.skipped.append(McpSkipped(server=server.name, name=name,
                                              reason=f"its input schema cannot be validated: {exc}"))
            continue
        notes = getattr(tool, "annotations", None)
        hints = McpHints(
            read_only=getattr(notes, "read_only_hint", None), destructive=getattr(notes, "destructive_hint", None),
            idempotent=getattr(notes, "idempotent_hint", None), open_world=getattr(notes, "open_world_hint", None),
        )
        text = redactor.redact(scrub(str(getattr(tool, "description", None) or "")))
        if len(text) > MAX_DESCRIPTION:
            text = text[:MAX_DESCRIPTION] + f" [description cut at {MAX_DESCRIPTION} characters]"
        listing.tools.append(McpToolEntry(server=server.name, name=name, description=text, input_schema=schema,
                                          hints=hints))
    for declared in (*server.read_only_tools, *server.idempotent_tools):
        if declared not in seen:
            listing.skipped.append(McpSkipped(server=server.name, name=declared,
                                              reason="named in the run spec but not listed by the server"))
    return listing
