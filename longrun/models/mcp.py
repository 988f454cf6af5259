"""MCP tool servers in a run spec, and what listing their tools found.

A server is part of the run's spec (`RunSpec.mcp_servers`): how to reach it, which of its tools the
spec declares read-only or idempotent, and which of the *worker's* environment variables hold its
secrets (header values, the stdio server's environment). The spec names the variables, never their
values, so no secret is stored in Postgres or crosses Temporal.

The listing (`McpListing`) is what the servers said at run start. Its descriptions and annotations
are server-supplied text: stored in Postgres as an artifact of the run, handed to the model as tool
descriptions, shown to approvers as hints, and never trusted to decide anything.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

MCP_SERVER_NAME = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*")
"""A server's name: lower case, single underscores, so `mcp__NAME__TOOL` splits one way only."""
MAX_SERVER_NAME = 20
ENV_VAR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
HEADER_NAME = re.compile(r"[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}")
TOOL_PREFIX = "mcp__"
LISTING_URI = "mcp-tools:listing"
"""The `ArtifactRef.uri` of a run's MCP tool listing in its task state."""


def mcp_tool_name(server: str, tool: str) -> str:
    """What the model calls a server's tool: `mcp__SERVER__TOOL`."""
    return f"{TOOL_PREFIX}{server}__{tool}"


def split_tool_name(name: str) -> tuple[str, str] | None:
    """(server, tool) of `mcp__SERVER__TOOL`, or None for any other name."""
    if not name.startswith(TOOL_PREFIX):
        return None
    server, sep, tool = name[len(TOOL_PREFIX):].partition("__")
    return (server, tool) if sep and server and tool else None


class McpServer(BaseModel):
    """One MCP server of a run. Every tool it lists is an effect that needs a human's approval,
    unless `read_only_tools` names it; `idempotent_tools` may run again after an interrupted call
    (else an interrupted call's outcome is unknown and goes to a human)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="lower case letters, digits and single underscores, at most 20")
    transport: Literal["stdio", "http"]
    command: list[str] = Field(default_factory=list, max_length=100,
                               description="stdio: the server's argv (program first), run without a shell")
    url: str | None = Field(default=None, max_length=2000, description="http: the streamable HTTP endpoint")
    headers: dict[str, str] = Field(
        default_factory=dict,
        description="http: header name -> the worker's environment variable holding its value (never the value)",
    )
    env: dict[str, str] = Field(
        default_factory=dict,
        description="stdio: the server's environment variable -> the worker's variable holding its value",
    )
    read_only_tools: list[str] = Field(default_factory=list, description="tools the spec declares read-only")
    idempotent_tools: list[str] = Field(default_factory=list, description="effect tools that may safely run twice")
    timeout_seconds: int = Field(default=60, ge=1, le=600, description="one connection and call, at most "
                                 "(under the 15 minutes a tool activity may take)")

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if len(v) > MAX_SERVER_NAME or not MCP_SERVER_NAME.fullmatch(v):
            raise ValueError(f"MCP server name {v!r} must be lower-case letters, digits and single underscores, "
                             f"starting with a letter, at most {MAX_SERVER_NAME} characters")
        return v

    @field_validator("headers", "env")
    @classmethod
    def _env_names(cls, v: dict[str, str]) -> dict[str, str]:
        for key, var in v.items():
            if not ENV_VAR_NAME.fullmatch(var):
                # the value is not echoed: a person who typed the secret itself should not see it logged
                raise ValueError(f"{key!r} must name an environment variable of the worker (letters, digits, _): "
                                 "the spec names where a secret is, never the secret itself")
        return v

    @model_validator(mode="after")
    def _transport_fields(self) -> McpServer:
        if self.transport == "stdio":
            if not self.command or not all(self.command):
                raise ValueError(f"MCP server {self.name!r}: stdio needs a command (program and arguments)")
            if self.url or self.headers:
                raise ValueError(f"MCP server {self.name!r}: url and headers are for http servers")
        else:
            if not self.url or not re.match(r"https?://[^\s/]+", self.url):
                raise ValueError(f"MCP server {self.name!r}: http needs a url starting with http:// or https://")
            if self.command or self.env:
                raise ValueError(f"MCP server {self.name!r}: command and env are for stdio servers")
            bad = [h for h in self.headers if not HEADER_NAME.fullmatch(h)]
            if bad:
                raise ValueError(f"MCP server {self.name!r}: invalid header name(s) {bad}")
        return self

    def read_only(self, tool: str) -> bool:
        return tool in self.read_only_tools

    def idempotent(self, tool: str) -> bool:
        return tool in self.idempotent_tools


class McpHints(BaseModel):
    """The server's own annotations of a tool: hints for the approver, never trusted."""

    model_config = ConfigDict(extra="forbid")

    read_only: bool | None = None
    destructive: bool | None = None
    idempotent: bool | None = None
    open_world: bool | None = None

    def describe(self) -> str:
        said = [f"{k}Hint={str(v).lower()}" for k, v in (("readOnly", self.read_only), ("destructive", self.destructive),
                                                         ("idempotent", self.idempotent), ("openWorld", self.open_world))
                if v is not None]
        return ", ".join(said) or "none"


class McpToolEntry(BaseModel):
    """One tool a server listed, as the run will offer it."""

    model_config = ConfigDict(extra="forbid")

    server: str
    name: str = Field(description="the server's name for the tool")
    description: str = Field(description="server-supplied (redacted, capped): untrusted text")
    input_schema: dict[str, Any]
    hints: McpHints = Field(default_factory=McpHints)

    @property
    def tool(self) -> str:
        return mcp_tool_name(self.server, self.name)


class McpSkipped(BaseModel):
    server: str
    name: str = Field(description="the tool, or '' when the whole server could not be listed")
    reason: str


class McpListing(BaseModel):
    """What the run's servers listed at its start: stored as one artifact of the run."""

    model_config = ConfigDict(extra="forbid")

    tools: list[McpToolEntry] = Field(default_factory=list)
    skipped: list[McpSkipped] = Field(default_factory=list)

    def entry(self, tool: str) -> McpToolEntry | None:
        return next((t for t in self.tools if t.tool == tool), None)
