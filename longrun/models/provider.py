"""The provider protocol's data: one request shape and one response shape for every model."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from longrun.models.blocks import Block, Message

StopReason = Literal[
    "end_turn", "max_tokens", "stop_sequence", "tool_use", "pause_turn", "refusal", "model_context_window_exceeded"
]


class ToolSpec(BaseModel):
    """A tool as the model sees it (Anthropic `tools[]` entry)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str
    input_schema: dict[str, Any]


class ProviderContext(BaseModel):
    """What a run in `provider` or `hybrid` context mode asks the provider to manage on its side
    (built by `ContextPolicy.provider_context`; docs/CONTEXT.md, "Modes"). The parameters are the
    policy's own: Anthropic's `clear_tool_uses_20250919` takes them as they are; OpenAI's
    compaction takes `trigger` as its `compact_threshold`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: Literal["provider", "hybrid"]
    trigger: int = Field(ge=1, description="input tokens over which the provider clears or compacts")
    keep: int = Field(ge=0, description="newest tool uses whose results are never cleared")
    clear_at_least: int = Field(ge=0)
    exclude_tools: tuple[str, ...] = ()
    clear_tool_inputs: bool = False
    compaction: bool = Field(default=False, description="Anthropic: also server compaction (`compact_20260112`)")
    compaction_trigger: int | None = Field(default=None, description="Anthropic compaction's trigger, input tokens")
    instructions: str | None = Field(default=None, description="Anthropic compaction's summarization instructions")


class ProviderContextReport(BaseModel):
    """What the provider says it did to the request's context: tool uses it cleared (Anthropic's
    `context_management.applied_edits`) and whether it compacted (a compaction block or item in
    the answer). Recorded on the transcript's assistant message and in the `provider_context`
    audit event; never a source of task state."""

    model_config = ConfigDict(extra="forbid")

    cleared_tool_uses: int = 0
    cleared_input_tokens: int = 0
    compacted: bool = False
    compaction_readable: bool = Field(
        default=True, description="False for OpenAI's opaque item: longrun keeps its own summary beside it"
    )
    compaction_input_tokens: int | None = Field(default=None, description="what the compaction pass read, if reported")
    applied_edits: list[dict[str, Any]] = Field(default_factory=list, description="the provider's report, verbatim")

    @property
    def anything(self) -> bool:
        return self.compacted or self.cleared_tool_uses > 0 or bool(self.applied_edits)


class ModelRequest(BaseModel):
    """Everything one model call sends. `system` is the stable prefix; the state block is the
    last text block of the last user message (see `longrun.context.render`)."""

    model_config = ConfigDict(extra="forbid")

    model: str
    system: str
    messages: list[Message]
    tools: list[ToolSpec] = Field(default_factory=list)
    max_tokens: int = Field(default=4096, ge=1)
    context: ProviderContext | None = Field(
        default=None, exclude=True,
        description="provider-side context management (`context.mode` provider/hybrid); None = longrun's alone",
    )


class Usage(BaseModel):
    model_config = ConfigDict(extra="ignore")

    input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    output_tokens: int = 0

    @property
    def total_input(self) -> int:
        """What the window holds: input + cache creation + cache read."""
        return self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            cache_creation_input_tokens=self.cache_creation_input_tokens + other.cache_creation_input_tokens,
            cache_read_input_tokens=self.cache_read_input_tokens + other.cache_read_input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
        )


class ModelResponse(BaseModel):
    model_config = ConfigDict(extra="forbid")

    content: list[Block]
    stop_reason: StopReason | None
    usage: Usage
    model: str
    context: ProviderContextReport | None = Field(default=None, description="what the provider cleared or compacted")


class ModelInfo(BaseModel):
    """One row of the per-model table: context window and maximum output tokens."""

    model_config = ConfigDict(frozen=True)

    name: str
    window: int
    max_output: int
