"""The tool contract: what every tool declares and how the activities call it.

A tool is one of three kinds:
- ``read``: no effect outside the run (list_dir, read_file, glob, grep, read_artifact);
- ``effect``: changes the world (write_file, apply_patch, move_path, delete_path, make_dir,
  run_command, MCP and custom tools); goes through
  the invariant gate, the effects ledger and, when ``needs_approval``, a human's approval;
- ``state``: changes TaskState only, through compare-and-set (record_decision, set_next_action,
  write_note, complete_stage); none of them can touch approvals or effects;
- ``delegate``: ``task``, run by the workflow itself as a child run (a subagent).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, Protocol

from longrun.models.gate import ToolKind as ToolKind
from longrun.models.provider import ToolSpec
from longrun.models.state import NextAction, TaskState
from longrun.tools.sandbox import SandboxPolicy


class ArtifactReader(Protocol):
    def get_artifact(self, sha256: str) -> bytes: ...


class MemoryReader(Protocol):
    """What `recall` reads: the run's fact store and the newest transcript entries."""

    def facts(self) -> list[Any]: ...

    def recent_entries(self, limit: int) -> list[Any]: ...


@dataclass(frozen=True)
class ToolContext:
    """Everything a tool may use. `action_id` doubles as the idempotency key of an effect."""

    run_id: str
    workspace: Path
    allowed_commands: list[list[str]] = field(default_factory=list)
    command_timeout: float = 120.0
    action_id: str = ""
    artifacts: ArtifactReader | None = None
    memory: MemoryReader | None = None
    """For `recall`: the run's fact store and transcript (None: no store, e.g. a bare ToolContext)."""
    now: datetime | None = None
    before: str | None = None
    """For `reconcile`: what `Tool.fingerprint` returned when the effect's intent was written
    (store it with the intent, e.g. in `Effect.detail`); None when it was not recorded."""
    sandbox: SandboxPolicy = field(default_factory=SandboxPolicy)
    """How `run_command` confines a command (the run spec's choice, else the worker's)."""
    allow_autorun_paths: tuple[str, ...] = ()
    """Files that run on their own (git hooks, `.envrc`, CI workflows, ...) the run spec lets
    effect tools write, by name (`RunSpec.allow_autorun_paths`)."""


@dataclass(frozen=True)
class ToolOutcome:
    """What a tool returns. `text` is the full output (it goes to the artifact store; the
    transcript gets it with its artifact reference). `external_id` identifies an effect at its
    target (a content hash, a message id) for the ledger and reconciliation."""

    text: str
    is_error: bool = False
    external_id: str | None = None
    sandbox: str | None = None
    """Where a command ran (`unshare (no network)`, ...), for the audit's tool_ran event."""


ReconcileStatus = Literal["confirmed", "none", "undecidable"]


@dataclass(frozen=True)
class ReconcileOutcome:
    status: ReconcileStatus
    external_id: str | None = None
    detail: str = ""


@dataclass(frozen=True)
class Tool:
    """A registered tool.

    Attributes:
        run: executes the tool (read and effect kinds). Raises `ToolError` with a message for the
            model when the input is refused.
        check: the tool's own invariant checks (path confinement, allow-list), run by the gate
            before any effect; returns a reason to deny, or None.
        reconcile: for effect tools, decides after a crash whether the effect with this
            idempotency key happened.
        apply_state: for state tools, returns the changed TaskState (never approvals/effects).
        allowed_next_actions: the `next_action` values under which the gate allows this tool.
        fingerprint: for effect tools whose reconcile needs to know the target's state before the
            effect (write_file): called when the intent is written; its result is handed back to
            `reconcile` as `ToolContext.before`. Optional: without it reconcile is more often
            undecidable, never wrong.
    """

    name: str
    description: str
    input_schema: dict[str, Any]
    kind: ToolKind = "read"
    needs_approval: bool = False
    run: Callable[[dict[str, Any], ToolContext], ToolOutcome] | None = None
    check: Callable[[dict[str, Any], ToolContext], str | None] | None = None
    reconcile: Callable[[dict[str, Any], ToolContext], ReconcileOutcome] | None = None
    apply_state: Callable[[TaskState, dict[str, Any], datetime], TaskState] | None = None
    allowed_next_actions: frozenset[NextAction] = frozenset(NextAction)
    fingerprint: Callable[[dict[str, Any], ToolContext], str | None] | None = None
    paths: Callable[[dict[str, Any]], list[str]] | None = None
    """For effect tools on workspace files: the workspace-relative paths a call changes (a move's
    source and destination, each file of a unified diff). A scope must cover every one of them,
    and a git change set commits exactly them. None: the `path` argument, when there is one."""
    commits: bool = False
    """The effect changes files of the workspace: in a git change set each confirmed call
    becomes one commit (write_file, apply_patch, move_path, delete_path, make_dir)."""
    path_arg: str | None = None
    """The argument holding the workspace path the effect changes (None: `path`, when there is one):
    what a scope's globs must cover. A tool built by `longrun.tool` declares it."""
    content_arg: str | None = None
    """The argument holding the whole new content of the file at `path_arg`: with both declared,
    `longrun show` diffs it against the file as it is, as for write_file."""

    def changed_paths(self, arguments: dict[str, Any]) -> list[str]:
        if self.paths is not None:
            return self.paths(arguments)
        path = arguments.get(self.path_arg or "path")
        return [path] if isinstance(path, str) else []

    @property
    def effectful(self) -> bool:
        return self.kind == "effect"

    def spec(self) -> ToolSpec:
        return ToolSpec(name=self.name, description=self.description, input_schema=self.input_schema)
