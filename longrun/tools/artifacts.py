"""`read_artifact`: brings back a stored tool result by its sha256.

The context pipeline clears old tool results and leaves a placeholder naming the artifact; this
tool is how the model gets the text back. Lines are returned as stored (a read_file result keeps
its line numbers), sliced by `offset` (1-based line) and `limit` (lines).

The reference may be the full hash or a unique prefix of at least `MIN_PREFIX` hex digits (models
abbreviate hashes; a short reference costs fewer tokens): the store resolves it, and an unknown or
ambiguous prefix is an error that says which.

A run reads only its family's artifacts: its own, its parent's and its children's (`RunArtifacts`
over the store's `run_artifacts` links). Artifacts are stored once per sha256 for every run, and
12-hex prefixes of other runs' outputs appear in audit logs; a reference to one is refused as if
nobody had stored it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from longrun.errors import ToolError
from longrun.tools._text import cap_bytes, decode
from longrun.tools.base import Tool, ToolContext, ToolOutcome

DEFAULT_ARTIFACT_LINES = 2000
MAX_ARTIFACT_BYTES = 1_000_000
MIN_PREFIX = 12
FULL_HEX = 64


class FamilyArtifactStore(Protocol):
    def get_family_artifact(self, run_id: str, sha256: str) -> bytes: ...

    def resolve_family_artifact_prefix(self, run_id: str, prefix: str) -> str: ...


@dataclass(frozen=True)
class RunArtifacts:
    """The artifacts one run may read: its own, its parent's and its children's."""

    store: FamilyArtifactStore
    run_id: str

    def get_artifact(self, sha256: str) -> bytes:
        return self.store.get_family_artifact(self.run_id, sha256)

    def resolve_artifact_prefix(self, prefix: str) -> str:
        return self.store.resolve_family_artifact_prefix(self.run_id, prefix)


def resolve(ref: str, artifacts: Any) -> str:
    """The full sha256 a reference names: itself when it is whole, else the one artifact whose
    hash starts with it (through the reader's `resolve_artifact_prefix`)."""
    if len(ref) == FULL_HEX:
        return ref
    resolver = getattr(artifacts, "resolve_artifact_prefix", None)
    if resolver is None:
        raise ToolError(f"this artifact store needs the full 64-digit sha256, not the prefix {ref}")
    try:
        return str(resolver(ref))
    except (KeyError, LookupError, ValueError) as exc:
        raise ToolError(f"sha256 prefix {ref}: {exc}") from exc


def _read_artifact(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    ref = args["sha256"]
    offset = args.get("offset", 1)
    limit = args.get("limit", DEFAULT_ARTIFACT_LINES)
    if ctx.artifacts is None:
        raise ToolError("no artifact store is available to this run")
    sha = resolve(ref, ctx.artifacts)
    try:
        data = ctx.artifacts.get_artifact(sha)
    except (KeyError, LookupError, FileNotFoundError, ValueError) as exc:
        raise ToolError(
            f"no artifact with sha256 {sha} belongs to this run, its parent or its children; use the reference exactly "
            "as the placeholder gives it"
        ) from exc
    text, repaired = decode(data)
    lines = text.splitlines()
    total = len(lines)
    if offset > max(total, 1):
        raise ToolError(f"offset {offset} is past the end of the artifact ({total} lines)")
    shown = lines[offset - 1 : offset - 1 + limit]
    body, cut = cap_bytes("\n".join(shown).encode("utf-8"), MAX_ARTIFACT_BYTES)
    notes = []
    if repaired:
        notes.append("[invalid UTF-8 or NUL bytes in the artifact were replaced with U+FFFD]")
    last = offset - 1 + len(shown)
    if cut:
        notes.append(f"[truncated at {MAX_ARTIFACT_BYTES} bytes; ask for fewer lines with limit]")
    elif last < total:
        notes.append(f"[lines {offset}-{last} of {total}; call read_artifact with offset={last + 1} for more]")
    out = body.decode("utf-8", errors="replace")
    return ToolOutcome(text="\n".join([out, *notes]) if notes else out)


READ_ARTIFACT = Tool(
    name="read_artifact",
    description=(
        "Fetch a stored tool result (cleared from the conversation) by its sha256 reference (the full hash or a "
        "unique prefix of at least 12 hex digits). offset is the first line (1-based), limit the number of lines "
        "(default 2000)."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "sha256": {"type": "string", "pattern": "^[0-9a-f]{12,64}$", "maxLength": 64,
                       "description": "reference: the full sha256 or a unique prefix of 12+ hex digits"},
            "offset": {"type": "integer", "minimum": 1},
            "limit": {"type": "integer", "minimum": 1, "maximum": 100_000},
        },
        "required": ["sha256"],
        "additionalProperties": False,
    },
    kind="read",
    run=_read_artifact,
)
