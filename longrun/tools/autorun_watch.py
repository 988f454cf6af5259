"""What a command leaves behind that would run later, outside the sandbox: found and removed.

Why: the sandbox binds the workspace's existing auto-run paths (`.git`, `.envrc`, ...) read-only,
but a command can still *create* new ones below them: `git init sub` plus a `core.fsmonitor` line
in `sub/.git/config`, and the next `git status` in `sub/` (a shell prompt runs one) runs it on the
host; with `--in-place` that is the user's own tree. So `run_command` takes a `snapshot` of every
auto-run entry in the workspace before the command (names matching `autorun.AUTORUN_PATHS` at any
depth, compared as `autorun.fold` spells them: `.GIT`, `.git.`, `git~1`), binds those read-only
in the sandbox, and after the command removes every entry that was not there before
(`remove_new`), saying so in the result (whose first line the audit's `tool_ran` event keeps).

The walk is bounded (`WALK_LIMIT` entries); a workspace larger than that is checked only that far,
and the result says so.

Tests: tests/test_sandbox_autorun_watch.py.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

from longrun.tools.autorun import AUTORUN_PATHS, fold

WALK_LIMIT = 200_000
"""Directory entries looked at, at most, per snapshot."""
PROTECT_LIMIT = 64
"""Nested auto-run entries bound read-only in the sandbox, at most (mounts are not free)."""
_NAMES = frozenset(p for p in AUTORUN_PATHS if "/" not in p)
_PAIRS = frozenset(tuple(p.split("/")) for p in AUTORUN_PATHS if "/" in p)


@dataclass(frozen=True)
class Snapshot:
    """Auto-run entries (workspace-relative, `/`-separated) and whether the walk saw everything."""

    paths: frozenset[str]
    complete: bool


def _is_autorun(parent: str, name: str) -> bool:
    folded = fold(name)
    return folded in _NAMES or (fold(parent), folded) in _PAIRS


def snapshot(workspace: Path, limit: int = WALK_LIMIT) -> Snapshot:
    """Every auto-run entry of `workspace` (not descending into them nor following symlinks)."""
    root = str(workspace.resolve())
    found: set[str] = set()
    seen = 0
    stack = [""]
    while stack:
        rel = stack.pop()
        try:
            entries = list(os.scandir(os.path.join(root, rel) if rel else root))
        except OSError:
            continue
        for entry in entries:
            seen += 1
            if seen > limit:
                return Snapshot(frozenset(found), complete=False)
            path = f"{rel}/{entry.name}" if rel else entry.name
            if _is_autorun(os.path.basename(rel), entry.name):
                found.add(path)
            elif entry.is_dir(follow_symlinks=False):
                stack.append(path)
    return Snapshot(frozenset(found), complete=True)


def protected(workspace: Path, before: Snapshot) -> list[Path]:
    """The nested entries to bind read-only in the sandbox (the top-level ones the sandbox binds
    itself), shallowest first, at most PROTECT_LIMIT."""
    root = workspace.resolve()
    nested = sorted((p for p in before.paths if "/" in p), key=lambda p: (p.count("/"), p))
    return [root / p for p in nested[:PROTECT_LIMIT] if not (root / p).is_symlink()]


def _remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        if stat.S_ISDIR(os.lstat(path).st_mode):
            shutil.rmtree(path)
        else:
            os.unlink(path)


def remove_new(workspace: Path, before: Snapshot) -> tuple[list[str], bool]:
    """Remove the auto-run entries that appeared since `before`.

    Returns:
        (the removed entries, workspace-relative; whether the check saw the whole workspace).
    """
    root = str(workspace.resolve())
    after = snapshot(workspace)
    removed: list[str] = []
    for rel in sorted(after.paths - before.paths, key=lambda p: (p.count("/"), p)):
        if any(rel.startswith(r + "/") for r in removed):
            continue
        try:
            _remove(os.path.join(root, rel))
        except OSError:
            continue  # left in place; the next command's check sees it again
        removed.append(rel)
    return removed, before.complete and after.complete


def notice(removed: list[str], complete: bool) -> tuple[str, str | None]:
    """(what the result's first line says, a paragraph for its end), or ('', None) when nothing."""
    lines = []
    head = ""
    if removed:
        head = f"; REMOVED {len(removed)} auto-run entries the command created: {', '.join(removed)}"
        lines.append(
            "--- removed ---\nThe command created files that git, a shell or an editor would run later, outside "
            f"the sandbox; they were removed: {', '.join(removed)}. Commands may not create `.git`, `.envrc`, "
            "`.husky`, `.vscode`, `.pre-commit-config.yaml` or `.github/workflows` entries; write such files with "
            "write_file (the run spec's allow_autorun_paths must name them)."
        )
    if not complete:
        lines.append(f"[the workspace has more than {WALK_LIMIT} entries: the check for auto-run files saw only part "
                     "of it]")
    return head, "\n".join(lines) or None
