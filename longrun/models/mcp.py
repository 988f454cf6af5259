"""MCP tool servers: configured on the worker, named by a run, and what listing their tools found.

A server is configured on the *worker* (`McpServerConfig`, from `longrun.mcp.config`): the command
it starts or the URL it connects to, and which of the worker's environment variables hold its
secrets (header values, the stdio server's environment). A run spec only *names* servers
(`McpServerRef` in `RunSpec.mcp_servers`), with the tools the run declares read-only or idempotent.
Starting a run therefore never chooses what a worker executes or connects to (docs/SECURITY.md,
"Trust boundaries"). The worker joins the two into an `McpServer` when it lists or calls.

Specs stored before this rule may still define a server in place (`transport`, `command`, `url`,
...). They load, so that old runs can be shown, marked `inline`; no worker runs them, and a new
spec that tries is refused with how to configure the server on the worker.

The listing (`McpListing`) is what the servers said at run start. Its descriptions and annotations
are server-supplied text: stored in Postgres as an artifact of the run, handed to the model as tool
descriptions, shown to approvers as hints, and never trusted to decide anything.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

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


def check_server_name(v: str) -> str:
    if len(v) > MAX_SERVER_NAME or not MCP_SERVER_NAME.fullmatch(v):
        raise ValueError(f"MCP server name {v!r} must be lower-case letters, digits and single underscores, "
                         f"starting with a letter, at most {MAX_SERVER_NAME} characters")
    return v


def env_variable(name: str) -> str:
    """The worker's variable that configures server `name`: `LONGRUN_MCP_<NAME>`."""
    return f"LONGRUN_MCP_{name.upper()}"


class McpServerConfig(BaseModel):
    """How a worker reaches one MCP server: configured on the worker, never in a run spec."""

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
    timeout_seconds: int = Field(default=60, ge=1, le=600, description="one connection and call, at most "
                                 "(under the 15 minutes a tool activity may take)")

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return check_server_name(v)

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
    def _transport_fields(self) -> McpServerConfig:
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

    def for_run(self, ref: McpServerRef) -> McpServer:
        """This server with what the run declares of its tools."""
        return McpServer(**self.model_dump(), read_only_tools=list(ref.read_only_tools),
                         idempotent_tools=list(ref.idempotent_tools))


class McpServer(McpServerConfig):
    """One MCP server of a run: the worker's configuration joined with the run's declarations.
    Every tool it lists is an effect that needs a human's approval, unless `read_only_tools`
    names it; `idempotent_tools` may run again after an interrupted call (else an interrupted
    call's outcome is unknown and goes to a human)."""

    read_only_tools: list[str] = Field(default_factory=list, description="tools the spec declares read-only")
    idempotent_tools: list[str] = Field(default_factory=list, description="effect tools that may safely run twice")

    def read_only(self, tool: str) -> bool:
        return tool in self.read_only_tools

    def idempotent(self, tool: str) -> bool:
        return tool in self.idempotent_tools


STORED_SPEC: dict[str, Any] = {"longrun_stored_spec": True}
"""Validation context of a spec read back from Postgres (`RunSpec.model_validate(..., context=...)`):
an old in-place server definition loads (marked `inline`, never run) instead of failing the read."""
INLINE_FIELDS = ("transport", "command", "url", "headers", "env", "timeout_seconds")
"""What a spec entry held when a run spec defined its server in place (the old `--mcp NAME=stdio:CMD`)."""


def inline_refusal(name: str) -> str:
    """Why a spec may not define a server in place, and how to configure it on the worker."""
    return (f"MCP server {name!r} is defined in the run spec (a command or URL), and a spec may only name servers "
            f"the workers offer: configure it on the worker ({env_variable(name)}='stdio:COMMAND ARGS' or "
            f"'http:URL', or LONGRUN_MCP_CONFIG), then start the run with --mcp {name}")


class McpServerRef(BaseModel):
    """A run spec's MCP server: a name the workers' configuration offers, with the tools this run
    declares read-only (they run without approval) or idempotent (they may run again after an
    interrupted call). Nothing here says what to execute or where to connect."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="a server the workers offer (LONGRUN_MCP_<NAME> or LONGRUN_MCP_CONFIG)")
    read_only_tools: list[str] = Field(default_factory=list, description="tools the run declares read-only")
    idempotent_tools: list[str] = Field(default_factory=list, description="effect tools that may safely run twice")
    inline: bool = Field(default=False, description="a stored spec from before servers were configured on "
                         "workers defined this one in place: no worker runs it")

    @model_validator(mode="before")
    @classmethod
    def _no_definition_in_the_spec(cls, data: Any, info: ValidationInfo) -> Any:
        if not isinstance(data, dict):
            return data
        defined = [k for k in INLINE_FIELDS if k in data]
        if not defined and not data.get("inline"):
            return data
        if not (info.context or {}).get("longrun_stored_spec"):
            raise ValueError(inline_refusal(str(data.get("name", "?"))))
        return {**{k: v for k, v in data.items() if k not in INLINE_FIELDS}, "inline": True}

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return check_server_name(v)


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
