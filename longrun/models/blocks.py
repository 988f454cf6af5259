"""Anthropic-style content blocks: the provider-neutral message format everywhere in longrun.

Blocks keep unknown fields (`extra="allow"`) so that provider data such as thinking signatures or
citations survive a round trip through Postgres unmodified.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter


class _Block(BaseModel):
    model_config = ConfigDict(extra="allow")


class TextBlock(_Block):
    type: Literal["text"] = "text"
    text: str


class ThinkingBlock(_Block):
    type: Literal["thinking"] = "thinking"
    thinking: str
    signature: str = ""


class RedactedThinkingBlock(_Block):
    type: Literal["redacted_thinking"] = "redacted_thinking"
    data: str


class ToolUseBlock(_Block):
    type: Literal["tool_use"] = "tool_use"
    id: str
    name: str
    input: dict[str, Any] = Field(default_factory=dict)


class ToolResultBlock(_Block):
    type: Literal["tool_result"] = "tool_result"
    tool_use_id: str
    content: str | list[dict[str, Any]] = ""
    is_error: bool = False


class ImageBlock(_Block):
    type: Literal["image"] = "image"
    source: dict[str, Any]


Block = Annotated[
    TextBlock | ThinkingBlock | RedactedThinkingBlock | ToolUseBlock | ToolResultBlock | ImageBlock,
    Field(discriminator="type"),
]


class Message(BaseModel):
    """One message of a conversation: `{"role", "content": [blocks]}`. A string content is
    accepted on input and turned into one text block."""

    model_config = ConfigDict(extra="forbid")

    role: Literal["user", "assistant"]
    content: list[Block]

    @classmethod
    def user_text(cls, text: str) -> Message:
        return cls(role="user", content=[TextBlock(text=text)])

    def tool_uses(self) -> list[ToolUseBlock]:
        return [b for b in self.content if isinstance(b, ToolUseBlock)]

    def tool_results(self) -> list[ToolResultBlock]:
        return [b for b in self.content if isinstance(b, ToolResultBlock)]

    def text(self) -> str:
        return "\n".join(b.text for b in self.content if isinstance(b, TextBlock))

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> Message:
        """Parse a message as the Anthropic API writes it (string content allowed)."""
        content = data.get("content")
        if isinstance(content, str):
            data = {**data, "content": [{"type": "text", "text": content}]}
        return cls.model_validate(data)

    def to_wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


block_adapter: TypeAdapter[Block] = TypeAdapter(Block)
