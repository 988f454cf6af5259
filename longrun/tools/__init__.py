"""Tools: the registry, the built-in tools and the contract they share (see `base`).

Every path a tool touches is confined to the run's workspace (`confine`); commands run only from
the run's allow-list, without a shell (`run_command`); state tools return a changed copy of the
`TaskState` and never touch approvals or effects.

Where each built-in may run (the invariant gate's rule 4, `Tool.allowed_next_actions`):

    tool                          inspect  edit  test  ask_human  stop
    list_dir, read_file, glob,      yes    yes   yes     yes      yes
      grep, read_artifact
    record_decision, set_next_      yes    yes   yes     yes      yes
      action, write_note, complete_stage
    write_file, apply_patch,         -     yes    -       -        -
      move_path, delete_path,
      make_dir
    run_command                     yes     -    yes      -        -
    task (a subagent)               yes    yes   yes     yes      yes   (never inside a subagent)
    mcp__NAME__TOOL, read-only      yes    yes   yes     yes      yes   (only when the run spec's
      by the run spec                                                    `read_only_tools` names it)
    mcp__NAME__TOOL, any other       -     yes    -       -        -    (an effect needing approval;
                                                                         `longrun.mcp`)
    custom (`@longrun.tool`)        as its `allowed_next_actions` say (default: all)

Custom tools come from typed functions (`functions.tool`), are added by the worker (`loading`),
and each run is held to the tools recorded at its start (`recorded`).

The names below load on first use (PEP 562), as `longrun`'s do: a command that needs one small
module (`longrun status` reads `autorun` and `udiff` to warn about an edit that runs code) imports
the package first, and must not pay for the registry, every built-in tool and the context
pipeline that `recall` brings (tests/test_import_cost.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from longrun.lazy_names import lazy_names

if TYPE_CHECKING:
    from longrun.errors import ToolError
    from longrun.tools.artifacts import READ_ARTIFACT
    from longrun.tools.base import (
        ArtifactReader,
        ReconcileOutcome,
        ReconcileStatus,
        Tool,
        ToolContext,
        ToolKind,
        ToolOutcome,
    )
    from longrun.tools.commands import RUN_COMMAND, command_refusal, minimal_env
    from longrun.tools.files import LIST_DIR, READ_FILE, WRITE_FILE
    from longrun.tools.fs_tools import DELETE_PATH, GLOB, MAKE_DIR, MOVE_PATH
    from longrun.tools.functions import tool
    from longrun.tools.patch import APPLY_PATCH
    from longrun.tools.paths import check_write_path, confine
    from longrun.tools.registry import BUILTIN_TOOLS, ToolRegistry, default_registry
    from longrun.tools.search import GREP
    from longrun.tools.state_tools import COMPLETE_STAGE, RECORD_DECISION, SET_NEXT_ACTION, STEP_NEXT_ACTION, WRITE_NOTE
    from longrun.tools.task import TASK


_WHERE = {
    "APPLY_PATCH": "longrun.tools.patch",
    "ArtifactReader": "longrun.tools.base",
    "BUILTIN_TOOLS": "longrun.tools.registry",
    "COMPLETE_STAGE": "longrun.tools.state_tools",
    "DELETE_PATH": "longrun.tools.fs_tools",
    "GLOB": "longrun.tools.fs_tools",
    "GREP": "longrun.tools.search",
    "LIST_DIR": "longrun.tools.files",
    "MAKE_DIR": "longrun.tools.fs_tools",
    "MOVE_PATH": "longrun.tools.fs_tools",
    "READ_ARTIFACT": "longrun.tools.artifacts",
    "READ_FILE": "longrun.tools.files",
    "RECORD_DECISION": "longrun.tools.state_tools",
    "RUN_COMMAND": "longrun.tools.commands",
    "ReconcileOutcome": "longrun.tools.base",
    "ReconcileStatus": "longrun.tools.base",
    "SET_NEXT_ACTION": "longrun.tools.state_tools",
    "STEP_NEXT_ACTION": "longrun.tools.state_tools",
    "TASK": "longrun.tools.task",
    "Tool": "longrun.tools.base",
    "ToolContext": "longrun.tools.base",
    "ToolError": "longrun.errors",
    "ToolKind": "longrun.tools.base",
    "ToolOutcome": "longrun.tools.base",
    "ToolRegistry": "longrun.tools.registry",
    "WRITE_FILE": "longrun.tools.files",
    "WRITE_NOTE": "longrun.tools.state_tools",
    "check_write_path": "longrun.tools.paths",
    "command_refusal": "longrun.tools.commands",
    "confine": "longrun.tools.paths",
    "default_registry": "longrun.tools.registry",
    "minimal_env": "longrun.tools.commands",
    "tool": "longrun.tools.functions",
}
"""Each public name's module (see the docstring)."""


__getattr__, __dir__ = lazy_names(__name__, _WHERE, globals())


__all__ = [
    "APPLY_PATCH",
    "BUILTIN_TOOLS",
    "COMPLETE_STAGE",
    "DELETE_PATH",
    "GLOB",
    "GREP",
    "LIST_DIR",
    "MAKE_DIR",
    "MOVE_PATH",
    "READ_ARTIFACT",
    "READ_FILE",
    "RECORD_DECISION",
    "RUN_COMMAND",
    "SET_NEXT_ACTION",
    "STEP_NEXT_ACTION",
    "TASK",
    "WRITE_FILE",
    "WRITE_NOTE",
    "ArtifactReader",
    "ReconcileOutcome",
    "ReconcileStatus",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolKind",
    "ToolOutcome",
    "ToolRegistry",
    "check_write_path",
    "command_refusal",
    "confine",
    "default_registry",
    "minimal_env",
    "tool",
]
