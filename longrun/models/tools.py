"""What a run records about each tool it is offered at its start (`longrun.tools.recorded` says
how a run is held to it; table `run_tools`, migration 0010)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from longrun.models.gate import ToolKind

ToolSource = Literal["builtin", "custom", "mcp"]


class RecordedTool(BaseModel):
    """One tool a run was offered, as recorded at its start. `schema_sha256` covers its name, kind,
    approval, input schema, path and content arguments (`longrun.tools.recorded.schema_sha256`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    source: ToolSource
    kind: ToolKind
    needs_approval: bool
    schema_sha256: str
    input_schema: dict[str, Any]
    description: str
    path_arg: str | None = None
    content_arg: str | None = None
