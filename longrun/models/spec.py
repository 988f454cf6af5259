"""`RunSpec`: what a user asks for when starting a run, with the context policy and caps.

Defaults are documented where they are set, with why; docs/CONFIGURATION.md repeats them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import urlencode, urlsplit

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator, model_validator

from longrun.models.mcp import McpServerRef
from longrun.models.provider import ProviderContext
from longrun.models.state import MAX_TEXT

ShortText = Annotated[str, StringConstraints(max_length=MAX_TEXT)]
WEBHOOK_NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")
"""A webhook's name: lower case, so that it maps to one `LONGRUN_WEBHOOK_<NAME>_URL` variable."""


MODEL_PREFIX = re.compile(r"[a-z][a-z0-9-]{0,39}")
"""A model provider's prefix: what a run's model name starts with, before the `:`."""
_MODEL_NAME = re.compile(r"(?:[a-z][a-z0-9-]{0,39}):[^\s?]{1,200}")


def check_model_name(v: str) -> str:
    """`scripted` or `<prefix>:<model-id>`, by syntax only: which prefixes exist is the workers'
    registry's to say (longrun.providers.registry), and a spec is validated in processes (the
    client's, the workflow's) that cannot know a worker's own providers. A worker without a
    provider for the prefix refuses the run at its start, naming the prefixes it has."""
    if v != "scripted" and not _MODEL_NAME.fullmatch(v):
        raise ValueError(
            "model must be 'scripted' or 'anthropic:<model-id>' (or openai:, openai-compatible:, bedrock:, "
            f"vertex:<model-id>, or <prefix>:<model-id> of a provider the workers register), got {v!r}"
        )
    return v


def model_key(model: str, *, base_url: str | None = None, context_window: int | None = None) -> str:
    """What a worker builds a provider for: the model name, plus, for `openai-compatible:`, the
    run's server and window (a plain name when neither is given). Never a key: keys are the
    workers' environment's."""
    if not model.startswith("openai-compatible:") or (base_url is None and context_window is None):
        return model
    params = {k: v for k, v in (("base_url", base_url), ("window", context_window)) if v is not None}
    return f"{model}?{urlencode(params)}"


def check_base_url(v: str | None) -> str | None:
    """An http(s) URL without credentials in it: the spec is stored and shown, keys are not."""
    if v is None:
        return v
    parts = urlsplit(v)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"base_url must be an http:// or https:// URL, e.g. http://127.0.0.1:11434/v1; got {v!r}")
    if parts.username or parts.password or parts.query or parts.fragment:
        raise ValueError("base_url must not hold a user, password, query or fragment: put the server's key in the "
                         "workers' LONGRUN_OPENAI_API_KEY, never in the run's spec")
    return v.rstrip("/")


ALLOWED_BASE_URLS_VARIABLE = "LONGRUN_ALLOWED_BASE_URLS"


def _normal_url(url: str) -> str:
    parts = urlsplit(url.strip())
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}{parts.path.rstrip('/')}"


def base_url_refusal(url: str, allowed: Iterable[str]) -> str | None:
    """Why a worker will not connect to a run's `base_url` (None: `allowed` lists it). A run's
    spec only names a server; which servers a worker talks to is the operator's choice, else
    whoever may start a run could point a worker at any address it can reach."""
    allowed = [a for a in allowed if a]
    if any(_normal_url(url) == _normal_url(a) for a in allowed):
        return None
    listed = ", ".join(allowed) or "none"
    return (f"this worker does not connect to base_url {url}: a run may name only a server the workers allow "
            f"(their LONGRUN_OPENAI_BASE_URL or one {ALLOWED_BASE_URLS_VARIABLE} lists; allowed here: {listed}). "
            f"Add it to {ALLOWED_BASE_URLS_VARIABLE} on the workers, or start the run without --base-url to use "
            "their LONGRUN_OPENAI_BASE_URL")


PROVIDER_COMPACTION_MIN = 50_000
"""The least trigger Anthropic's server compaction accepts, in input tokens."""


class ContextPolicy(BaseModel):
    """Parameters of the context pipeline. Names follow Anthropic's context editing
    (`trigger`, `keep`, `clear_at_least`, `exclude_tools`, `clear_tool_inputs`) where they exist."""

    model_config = ConfigDict(extra="forbid")

    budget: int | None = Field(
        default=None,
        ge=1_000,
        description="most tokens a request may take; default: the model's window - reserve_output - headroom",
    )
    trigger: int | None = Field(
        default=None,
        ge=500,
        description="compact when the calibrated request exceeds this many input tokens; "
        "default: 100k (the anchors' default) or 75% of the budget, whichever is smaller",
    )
    target_ratio: float = Field(
        default=0.5, gt=0.05, le=0.95, description="compaction aims at trigger x target_ratio so it does not fire again at once"
    )
    keep: int = Field(default=3, ge=0, description="newest tool uses whose results microcompact never clears (anchor: 3)")
    clear_at_least: int = Field(
        default=2_000, ge=0, description="clear only if at least this many tokens are freed, so the cache rewrite pays off"
    )
    exclude_tools: list[str] = Field(default_factory=list, description="tools whose results are never cleared")
    clear_tool_inputs: bool = Field(default=False, description="also clear the inputs of cleared tool uses")
    tail_tokens: int = Field(default=20_000, ge=0, description="verbatim tail kept by the summary stage (Codex keeps 20k)")
    min_tail_turns: int = Field(default=2, ge=1, description="at least this many user turns stay verbatim (OpenCode: 2)")
    max_summary_tokens: int = Field(default=4_000, ge=200)
    reserve_output: int = Field(default=8_192, ge=256, description="tokens kept free for the model's answer")
    headroom: int = Field(default=2_000, ge=0, description="margin for estimator error after calibration")
    artifact_trim_tokens: int = Field(
        default=8_000, ge=200, description="stage 0: a single tool result larger than this becomes a reference"
    )
    summary_model: str | None = Field(
        default=None,
        description="model of stage 2's summaries, e.g. a cheaper one than the run's (`anthropic:<model-id>`), or "
        "`scripted` for the extractive summary; default: the run's model. A failing or rejected model summary "
        "falls back to the extractive one",
    )
    mode: Literal["client", "provider", "hybrid"] = Field(
        default="client",
        description="who manages context pressure (`--context-mode`; docs/CONTEXT.md, Modes): `client`, longrun's "
        "pipeline alone; `provider`, the provider's own (Anthropic's clear_tool_uses and optional server compaction, "
        "OpenAI's compaction) with longrun compacting only over the hard limit or after an overflow; `hybrid`, both. "
        "Other providers have none: there `provider` and `hybrid` behave as `client`",
    )
    provider_compaction: bool = Field(
        default=False,
        description="Anthropic, provider/hybrid mode: also server compaction (`compact_20260112`, its beta), at "
        "`provider_compaction_trigger`",
    )
    provider_compaction_trigger: int | None = Field(
        default=None, ge=1_000,
        description="input tokens over which Anthropic compacts; default: the trigger, at least 50k. The Claude API "
        "refuses less than 50,000 (PROVIDER_COMPACTION_MIN); lower values are for servers that accept them",
    )
    compaction_instructions: ShortText | None = Field(
        default=None, description="Anthropic server compaction: instructions for its summary, replacing the API's own"
    )

    @field_validator("summary_model")
    @classmethod
    def _known_summary_model(cls, v: str | None) -> str | None:
        return None if v is None else check_model_name(v)

    def provider_context(self, window: int) -> ProviderContext | None:
        """What to ask the provider to manage, in `provider` or `hybrid` mode (None in `client`):
        the policy's own trigger, keep, clear_at_least, exclude_tools and clear_tool_inputs."""
        if self.mode == "client":
            return None
        trigger = self.effective_trigger(window)
        return ProviderContext(
            mode=self.mode, trigger=trigger, keep=self.keep, clear_at_least=self.clear_at_least,
            exclude_tools=tuple(self.exclude_tools), clear_tool_inputs=self.clear_tool_inputs,
            compaction=self.provider_compaction,
            compaction_trigger=self.provider_compaction_trigger or max(PROVIDER_COMPACTION_MIN, trigger),
            instructions=self.compaction_instructions,
        )

    def limit(self, window: int) -> int:
        """The hard ceiling for one request: never sent over `window - reserve_output - headroom`
        (or `budget`, when smaller)."""
        hard = window - self.reserve_output - self.headroom
        return min(hard, self.budget) if self.budget else hard

    def effective_trigger(self, window: int) -> int:
        if self.trigger is not None:
            return min(self.trigger, self.limit(window))
        return min(100_000, int(self.limit(window) * 0.75))


class RunCaps(BaseModel):
    """Per-run limits: a runaway loop stops at the first cap it hits, with the reason recorded."""

    model_config = ConfigDict(extra="forbid")

    max_turns: int = Field(default=200, ge=1)
    max_model_calls: int = Field(default=300, ge=1)
    max_tool_calls: int = Field(default=1_000, ge=1)
    max_tokens: int = Field(default=20_000_000, ge=1_000, description="input + output tokens over the whole run")
    max_wall_seconds: int = Field(default=6 * 3600, ge=10)
    max_cost: float | None = Field(
        default=None, gt=0, le=1_000_000,
        description="US dollars for the run family (subagents included), checked before every model call "
                    "from the ledger; reaching it waits for a signed `longrun raise-budget`",
    )


def _subagent_caps() -> RunCaps:
    return RunCaps(max_turns=30, max_model_calls=40, max_tool_calls=80, max_tokens=2_000_000, max_wall_seconds=1800)


class RunSpec(BaseModel):
    """What to do, where, under whose approval, with which model and limits."""

    model_config = ConfigDict(extra="forbid")

    objective: ShortText = Field(min_length=1)
    constraints: list[ShortText] = Field(default_factory=list, max_length=200)
    workspace: str = Field(min_length=1, description="absolute path of the directory the run may touch")
    approvers: list[str] = Field(default_factory=list, description="names allowed to approve or reject actions")
    allowed_commands: list[list[str]] = Field(
        default_factory=list, description="argv lists `run_command` may execute, matched exactly, never through a shell"
    )
    model: str = Field(
        default="scripted",
        description="`scripted` (offline stand-in), `anthropic:<id>`, `openai:<id>` (Responses API), "
        "`openai-compatible:<id>` (a Chat Completions server at `base_url`), `bedrock:<id>`, `vertex:<id>`, or "
        "`<prefix>:<id>` of a provider the workers register (docs/LIBRARY.md, Custom models)",
    )
    base_url: str | None = Field(
        default=None,
        description="`openai-compatible:` only: the server's OpenAI base URL (`--base-url`); default: the workers' "
        "LONGRUN_OPENAI_BASE_URL. A worker connects only to that URL or one its LONGRUN_ALLOWED_BASE_URLS lists "
        "(else the run fails at its start). Its key, if any, is the workers' LONGRUN_OPENAI_API_KEY, never in the spec",
    )
    context_window: int | None = Field(
        default=None, ge=1_024,
        description="`openai-compatible:` only: the server's context window in tokens (`--context-window`); "
        "default 32,768 (longrun.providers.models_table.COMPATIBLE_DEFAULT_WINDOW)",
    )
    context: ContextPolicy = Field(default_factory=ContextPolicy)
    caps: RunCaps = Field(default_factory=RunCaps)
    approval_ttl_seconds: int = Field(default=1800, ge=1, description="default lifetime of an approval")
    command_timeout_seconds: int = Field(default=120, ge=1)
    sandbox: Literal["auto", "bwrap", "unshare", "none"] = Field(
        default="auto",
        description="where `run_command` runs: `bwrap` (bubblewrap), `unshare` (util-linux namespaces), `none` "
        "(no sandbox: the command sees what the worker sees; a worker runs such a spec only when it allows it, "
        "LONGRUN_ALLOW_UNSANDBOXED=1, else the run fails at its start) or `auto`: the worker's LONGRUN_SANDBOX, "
        "else bwrap when it works, else unshare, else commands are refused",
    )
    allow_network: bool = Field(
        default=False,
        description="commands reach the outside through slirp4netns, never the host's loopback, addresses or the "
        "stack's hosts (default: no network)",
    )
    command_memory_mb: int = Field(default=4096, ge=64, description="data-segment limit of each command process, MiB")
    allow_autorun_paths: list[str] = Field(
        default_factory=list, max_length=100,
        description="workspace-relative files or folders that run on their own (`.github/workflows/ci.yml`, `.husky/`, "
        "`.envrc`, `.vscode/tasks.json`, `.git/...`, the core.hooksPath) which write_file and apply_patch may write; "
        "default: none",
    )
    continue_as_new_every: int = Field(default=50, ge=2, description="turns between continue-as-new, at most")
    read_only: bool = Field(default=False, description="a subagent: read-only tools, no approvals, no `task`")
    in_place: bool = Field(
        default=False,
        description="edit the workspace folder itself even when it is in a git repository (`--in-place`); default: "
        "a git workspace gets a branch `longrun/<run_id>` in a worktree under $LONGRUN_HOME, one commit per edit",
    )
    subagent_width: int = Field(default=4, ge=1, le=16, description="subagents running at once, at most")
    subagent_caps: RunCaps = Field(default_factory=_subagent_caps, description="caps of each subagent run")
    subagent_model: str | None = Field(default=None, description="model of subagents; default: the run's model")
    webhooks: list[str] = Field(
        default_factory=list, max_length=10,
        description="names of the webhooks told about approvals, questions and the end of the run; each one's URL and "
        "secret are in the workers' environment (LONGRUN_WEBHOOK_<NAME>_URL / _SECRET), never in the spec",
    )
    mcp_servers: list[McpServerRef] = Field(
        default_factory=list, max_length=20,
        description="MCP tool servers by name (`--mcp NAME`): each must be one the workers offer (configured on the "
        "worker: LONGRUN_MCP_<NAME> or LONGRUN_MCP_CONFIG; a spec never says what to run or where to connect). "
        "Their tools are listed at run start and offered as mcp__NAME__TOOL; each is an effect needing approval "
        "unless the entry's `read_only_tools` names it",
    )

    @field_validator("workspace")
    @classmethod
    def _absolute_workspace(cls, v: str) -> str:
        if not Path(v).is_absolute():
            raise ValueError(f"workspace must be an absolute path, got {v!r}")
        return v

    @field_validator("model")
    @classmethod
    def _known_model_kind(cls, v: str) -> str:
        return check_model_name(v)

    @field_validator("base_url")
    @classmethod
    def _plain_base_url(cls, v: str | None) -> str | None:
        return check_base_url(v)

    def provider_key(self, model: str | None = None) -> str:
        """The model key of `model` (default: the run's) with this run's server and window."""
        return model_key(model or self.model, base_url=self.base_url, context_window=self.context_window)

    @field_validator("allowed_commands")
    @classmethod
    def _nonempty_argv(cls, v: list[list[str]]) -> list[list[str]]:
        for argv in v:
            if not argv or not all(isinstance(a, str) and a for a in argv):
                raise ValueError(f"each allowed command must be a non-empty argv list of non-empty strings, got {argv!r}")
        return v

    @field_validator("webhooks")
    @classmethod
    def _webhook_names(cls, v: list[str]) -> list[str]:
        names = [n.strip().lower() for n in v]
        for name in names:
            if not WEBHOOK_NAME.fullmatch(name):
                raise ValueError(
                    f"webhook name {name!r} must be a letter followed by letters, digits or _ (at most 40): it names "
                    "the workers' LONGRUN_WEBHOOK_<NAME>_URL variable"
                )
        return list(dict.fromkeys(names))

    @field_validator("mcp_servers")
    @classmethod
    def _unique_mcp_names(cls, v: list[McpServerRef]) -> list[McpServerRef]:
        names = [s.name for s in v]
        if len(set(names)) != len(names):
            raise ValueError(f"MCP server names must be unique, got {names}")
        return v

    @model_validator(mode="after")
    def _approvers_named(self) -> RunSpec:
        if any(not a.strip() for a in self.approvers):
            raise ValueError("approvers must be non-empty names")
        return self
