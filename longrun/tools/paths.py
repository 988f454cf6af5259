"""Workspace confinement: every path a tool touches goes through `confine`.

The rule is the one that survived the security corpus (REFERENCE.md, "Security corpora"):
`(workspace / path).resolve()` and then `is_relative_to(workspace.resolve())`. Resolving follows
symlinks (also dangling ones, to where they point), so a link to `/etc` inside the workspace is
refused like `../`; comparing path *components* (not string prefixes) refuses the sibling
`../<workspace-name>evil/x`. Anything string-based (`startswith`, stripping `..`) failed somewhere.

Effect tools are stricter than read tools (`check_write_path`): a path relative to the workspace
with no `..` component at all, even one that stays inside, no symlink in any component (scopes,
the RUNS CODE warning and the change set judge the path as written, so a write through
`docs/guide.md -> ../conftest.py` would change a file none of them looked at; `safe_open.first_symlink`
walks the components with `O_NOFOLLOW`), and nothing that runs on its own (`longrun.tools.autorun`): `.git` at any depth
and in any spelling a case-insensitive filesystem takes for it (`.GIT`, `.git.`, `git~1`), the
repository's `core.hooksPath`, `.husky/`, `.pre-commit-config.yaml`, `.envrc`, `.vscode/`,
`.github/workflows/`, unless the run spec names the path in `allow_autorun_paths`. A hook
written there would run code outside the allow-list and outside any sandbox, on the user's next
`git commit` or `cd`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from longrun.errors import SymlinkInPath, ToolError, WorkspaceEscape
from longrun.tools.autorun import autorun_refusal
from longrun.tools.safe_open import first_symlink

SKIP_DIRS = frozenset({".git", "__pycache__", ".venv"})
"""Directories listings and searches skip."""

FORBIDDEN_WRITE_DIRS = frozenset({".git"})
"""Path components effect tools never write under without the spec's leave (compared after
`autorun.fold`: case-insensitively; see `autorun.autorun_refusal` for the rest)."""


def confine(workspace: Path, path: str) -> Path:
    """Resolve `path` relative to `workspace` and make sure it stays inside.

    Args:
        workspace: the run's workspace directory.
        path: what the model asked for, relative to the workspace ("." is the workspace itself).

    Returns:
        The resolved absolute path (symlinks followed), inside the resolved workspace.

    Raises:
        WorkspaceEscape: the path holds a NUL byte, or resolves outside the workspace (`..`,
            an absolute path elsewhere, a sibling directory sharing the name prefix, a symlink
            pointing out).
    """
    if not isinstance(path, str):
        raise WorkspaceEscape(f"path must be a string, got {type(path).__name__}")
    if "\x00" in path:
        raise WorkspaceEscape(f"path {path!r} contains a NUL byte; give a plain path relative to the workspace")
    root = workspace.resolve()
    try:
        resolved = (root / path).resolve()
    except (OSError, RuntimeError) as exc:  # symlink loops, over-long names
        raise WorkspaceEscape(f"path {path!r} cannot be resolved inside the workspace: {exc}") from exc
    if not resolved.is_relative_to(root):
        raise WorkspaceEscape(
            f"path {path!r} resolves to {str(resolved)!r}, outside the workspace; "
            "give a path relative to the workspace that stays inside it (symlinks included)"
        )
    return resolved


def relative(workspace: Path, resolved: Path) -> str:
    """The workspace-relative POSIX form of a confined path, for output ("." for the root)."""
    rel = resolved.relative_to(workspace.resolve()).as_posix()
    return rel or "."


def check_write_path(workspace: Path, path: str, *, allow: Sequence[str] = ()) -> Path:
    """`confine` plus the rules for paths an effect tool writes to.

    Args:
        allow: the run spec's `allow_autorun_paths`: auto-run paths it lets effect tools write.

    Returns:
        The resolved path, which (no component being a link) is the path as written.

    Raises:
        WorkspaceEscape: as `confine`, or the path has a `..` component.
        SymlinkInPath: a component of the path is a symlink, or the path is absolute.
        ToolError: the path is the workspace directory itself, or a file that runs on its own
            (`.git` in any spelling, the hooksPath, `.husky/`, `.envrc`, ...) the spec does not allow.
    """
    if isinstance(path, str) and ".." in PurePosixPath(path.replace("\\", "/")).parts:
        raise WorkspaceEscape(
            f"path {path!r} contains '..'; effect tools take a path relative to the workspace without '..'"
        )
    resolved = confine(workspace, path)
    root = workspace.resolve()
    rel_parts = resolved.relative_to(root).parts
    if not rel_parts:
        raise ToolError(f"path {path!r} is the workspace directory itself; name a file inside it")
    refuse_symlinks(workspace, path, resolved)
    refusal = autorun_refusal(workspace, resolved, allow)
    if refusal:
        raise ToolError(f"path {refusal}")
    return resolved


def refuse_symlinks(workspace: Path, path: str, resolved: Path) -> None:
    """Refuse an effect's path that is absolute or has a symlink in any component.

    Why: scopes, the RUNS CODE warning and the change set's commit all judge the path as written;
    only a path without links is the file that changes. `resolved` is `confine(workspace, path)`.

    Raises:
        SymlinkInPath: with the link, where it points and what to do instead.
    """
    real = relative(workspace, resolved)
    if os.path.isabs(path):
        raise SymlinkInPath(
            f"path {path!r} is absolute; effect tools take a path relative to the workspace, "
            f"which scopes, the RUNS CODE warning and the change set judge as written: give {real!r}"
        )
    parts = [p for p in PurePosixPath(path).parts if p not in ("", ".")]
    index = first_symlink(workspace.resolve(), parts)
    if index is None:
        return
    link = "/".join(parts[: index + 1])
    try:
        points_to = os.readlink(workspace.resolve() / link)
    except OSError:
        points_to = "?"
    raise SymlinkInPath(
        f"path {path!r} goes through the symlink {link!r} (-> {points_to!r}); effect tools never write through "
        f"a symlink, because scopes, the RUNS CODE warning and the change set judge the path as written. Edit "
        f"the file by its own path, {real!r}, which is then checked, approved and committed as itself; to change "
        "or remove the link itself, use a command the run allows"
    )
