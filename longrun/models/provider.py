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


class ModelRequest(BaseModel):
    """Everything one model call sends. `system` is the stable prefix; the state block is the
    last text block of the last user message (see `longrun.context.render`)."""

    model_config = ConfigDict(extra="forbid")

    model: str
    system: str
    messages: list[Message]
    tools: list[ToolSpec] = Field(default_factory=list)
    max_tokens: int = Field(default=4096, ge=1)


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


class ModelInfo(BaseModel):
    """One row of the per-model table: context window and maximum output tokens."""

    model_config = ConfigDict(frozen=True)

    name: str
    window: int
    max_output: int
