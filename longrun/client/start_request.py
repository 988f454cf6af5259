"""What a start request may say, and the `RunSpec` it makes: one set of rules for `longrun start`
and the console's `POST /api/runs`, so a run the CLI would refuse is refused over HTTP too.

`StartRequest` holds what a person writes (a duration as `30m`, an allowed command as one string
split like a shell would, MCP servers by name); `build_spec` checks it against this machine (the
workspace exists, a git workspace is clean unless `in_place`) and the settings (default model,
the MCP servers the workers offer) and returns the spec. Its errors name the option with the
caller's spelling (`flag`): `--base-url` on the command line, `base_url` in JSON.
"""

from __future__ import annotations

import shlex
from argparse import Namespace
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from longrun import render
from longrun.errors import ConfigError
from longrun.mcp import cli as mcp_names
from longrun.models.spec import ContextPolicy, RunSpec
from longrun.service.settings import Settings
from longrun.tools.sandbox import SandboxMode
from longrun.workspace.changeset import dirty_files, is_git_workspace


class InvalidStart(ConfigError):
    """The request cannot make a run (nothing was started); the message says what to change."""


class DirtyWorkspace(InvalidStart):
    """A git workspace with uncommitted changes, without `in_place`."""


class StartRequest(BaseModel):
    """A run to start, as a person asks for it (the options of `longrun start`, docs/CLI.md)."""

    model_config = ConfigDict(extra="forbid")

    objective: str = Field(min_length=1, max_length=20_000, description="what the run must do")
    workspace: str = Field(min_length=1, max_length=4_096,
                           description="the folder the run may read and (with approval) edit, as the workers see it")
    constraints: list[str] = Field(default_factory=list, max_length=100, description="binding constraints, verbatim")
    approvers: list[str] = Field(default_factory=list, max_length=50,
                                 description="who may approve (default: the caller)")
    allow_commands: list[str] = Field(default_factory=list, max_length=100,
                                      description="exact commands run_command may execute, each split like a shell "
                                                  "would, never run through one")
    model: str | None = Field(default=None, max_length=200, description="default: the configured default model")
    base_url: str | None = Field(default=None, max_length=2_000, description="openai-compatible only")
    context_window: int | None = Field(default=None, description="openai-compatible only")
    budget: int | None = Field(default=None, description="most tokens one model request may take")
    trigger: int | None = Field(default=None, description="compact when a request exceeds this many tokens")
    summary_model: str | None = Field(default=None, max_length=200)
    context_mode: Literal["client", "provider", "hybrid"] | None = None
    provider_compaction: bool = False
    approval_ttl: str | None = Field(default=None, max_length=20, description="e.g. 30m, 2h (default 30m)")
    max_turns: int | None = None
    max_cost: float | None = Field(default=None, gt=0, le=1_000_000,
                                   description="US dollars for the run and its subagents; reaching it waits for a raise")
    sandbox: SandboxMode | None = None
    allow_network: bool = False
    webhooks: list[str] = Field(default_factory=list, max_length=20)
    in_place: bool = False
    mcp: list[str] = Field(default_factory=list, max_length=20, description="MCP servers the workers offer, by name")
    mcp_read_only: list[str] = Field(default_factory=list, max_length=200, description="NAME:TOOL")
    mcp_idempotent: list[str] = Field(default_factory=list, max_length=200, description="NAME:TOOL")


Flag = Callable[[str], str]


def field_name(name: str) -> str:
    """How JSON callers spell an option: the field's name."""
    return name


def build_spec(req: StartRequest, settings: Settings, *, default_approver: str, flag: Flag = field_name) -> RunSpec:
    """The run spec `req` asks for.

    Raises:
        InvalidStart: the request is wrong (nothing was started; the message names the option).
        DirtyWorkspace: a git workspace has uncommitted changes and `in_place` is off."""
    workspace = Path(req.workspace).expanduser()
    if not workspace.is_dir():
        raise InvalidStart(f"workspace {req.workspace} does not exist or is not a directory; pass an existing folder "
                           "(nothing was started)")
    commands = []
    for raw in req.allow_commands:
        try:
            argv = shlex.split(raw)
        except ValueError as exc:
            raise InvalidStart(f"{flag('allow_commands')} {raw!r}: {exc}") from exc
        if not argv:
            raise InvalidStart(f"{flag('allow_commands')} needs a command, e.g. 'python -m pytest -q'")
        commands.append(argv)
    context: dict[str, Any] = {k: v for k, v in (("budget", req.budget), ("trigger", req.trigger),
                                                 ("summary_model", req.summary_model), ("mode", req.context_mode))
                               if v is not None}
    if req.provider_compaction:
        if req.context_mode not in ("provider", "hybrid"):
            raise InvalidStart(f"{flag('provider_compaction')} needs {flag('context_mode')} provider or hybrid")
        context["provider_compaction"] = True
    model = req.model or settings.default_model
    if (req.base_url is not None or req.context_window is not None) and not model.startswith("openai-compatible:"):
        raise InvalidStart(f"{flag('base_url')} and {flag('context_window')} are for openai-compatible:MODEL runs, "
                           f"not {model!r} (nothing was started)")
    extra: dict[str, Any] = {k: v for k, v in (("base_url", req.base_url), ("context_window", req.context_window),
                                               ("sandbox", req.sandbox)) if v is not None}
    if req.approval_ttl:
        try:
            extra["approval_ttl_seconds"] = render.parse_duration(req.approval_ttl)
        except ValueError as exc:
            raise InvalidStart(f"{flag('approval_ttl')}: {exc}") from exc
    if req.max_turns is not None:
        extra["caps"] = {"max_turns": req.max_turns}
    if req.max_cost is not None:
        extra["caps"] = {**extra.get("caps", {}), "max_cost": req.max_cost}
    if req.allow_network:
        extra["allow_network"] = True
    if req.webhooks:
        extra["webhooks"] = req.webhooks
    if req.in_place:
        extra["in_place"] = True
    else:
        refuse_dirty_workspace(workspace, settings, flag)
    try:
        offered = [s.name for s in settings.mcp_servers] or None  # None: this machine cannot see the workers'
        names = Namespace(mcp=req.mcp, mcp_read_only=req.mcp_read_only, mcp_idempotent=req.mcp_idempotent,
                          mcp_env=[], mcp_header=[])
        extra["mcp_servers"] = mcp_names.servers(names, offered)
    except ValueError as exc:
        raise InvalidStart(f"{exc} (nothing was started)") from exc
    try:
        return RunSpec(
            objective=req.objective, constraints=req.constraints, workspace=str(workspace.resolve()),
            approvers=req.approvers or [default_approver], allowed_commands=commands,
            model=model, context=ContextPolicy(**context), **extra,
        )
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'spec'}: {e['msg']}" for e in exc.errors())
        raise InvalidStart(f"invalid run: {problems}") from exc


def refuse_dirty_workspace(workspace: Path, settings: Settings, flag: Flag = field_name) -> None:
    """A git workspace with uncommitted changes is refused before anything is started (the
    worker's `open_change_set` refuses it too, audited, should it get dirty meanwhile).

    Raises:
        DirtyWorkspace: it has some (the message lists them and says what to do)."""
    if not is_git_workspace(workspace):
        return
    dirty = dirty_files(workspace, exclude=[settings.home])
    if dirty:
        listed = ", ".join(dirty[:10]) + (f" and {len(dirty) - 10} more" if len(dirty) > 10 else "")
        raise DirtyWorkspace(f"the workspace {workspace} is a git repository with uncommitted changes ({listed}); a "
                             "run works on a branch from HEAD, without them. Commit or stash them, or pass "
                             f"{flag('in_place')} to edit the folder itself (nothing was started)")


__all__ = ["DirtyWorkspace", "InvalidStart", "StartRequest", "build_spec", "field_name", "refuse_dirty_workspace"]
