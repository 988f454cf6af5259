"""A run's change set: its own branch `longrun/<run_id>`, checked out in a worktree under
`$LONGRUN_HOME/worktrees/`, one commit per confirmed effect on files.

Why a branch and a worktree: the user's checkout is never touched (their uncommitted work, their
current branch), the run's edits are reviewable as what they are (`longrun diff RUN`, or any git
tool on the branch), and a crash is settled by git itself: an effect's commit carries its action
id as a trailer, so "did the edit happen?" becomes "is the commit there?".

The crash window is the time between the tool writing the files and the commit: there the
tool's own reconcile (fingerprints, atomic writes) decides, and a `confirmed` verdict commits the
files then, so every confirmed effect ends as exactly one commit, however often the worker died.

What is decided where: `open_change_set` (activity `open_change_set`, once at the run's start)
refuses a dirty workspace and creates the branch and worktree; `commit_effect` and
`find_commit` run inside the tool activities.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from longrun.tools.safe_open import first_symlink
from longrun.workspace.git import GitError, git, git_ok, in_work_tree

BRANCH_PREFIX = "longrun/"
ACTION_TRAILER = "Longrun-Action"
MAX_DIRTY_LISTED = 10


class WorkspaceDirty(GitError):
    """The workspace has uncommitted changes: a branch from HEAD would not hold them."""


@dataclass(frozen=True)
class ChangeSet:
    """Where a run's change set lives.

    Attributes:
        repo: the top level of the user's repository (the branch is one of its refs).
        branch: `longrun/<run_id>`.
        base: the commit the branch started from.
        worktree: the worktree's top level, under `$LONGRUN_HOME/worktrees/`.
        workspace: where the run works: the worktree, or the same subfolder of it that the
            spec's workspace is of the repository.
    """

    repo: str
    branch: str
    base: str
    worktree: str
    workspace: str


@dataclass(frozen=True)
class Trailers:
    """What a commit says about the approval behind it."""

    action_id: str
    action_hash: str = ""
    approval_id: str = ""
    approver: str = ""


def branch_for(run_id: str) -> str:
    return BRANCH_PREFIX + run_id


def is_git_workspace(workspace: Path) -> bool:
    """Whether a run on `workspace` gets a change set: it is in a git work tree and not in a part
    the repository ignores (a folder under an ignored `.longrun/`, a dotfiles repository's home
    directory with `*` ignored) -- those are edited in place, as a folder outside git is."""
    if not in_work_tree(workspace):
        return False
    ws = workspace.resolve()
    prefix = git(ws, "rev-parse", "--show-prefix").strip("/")
    return not (prefix and git_ok(Path(git(ws, "rev-parse", "--show-toplevel")), "check-ignore", "-q", "--", prefix,
                                    literal=False))


def dirty_files(workspace: Path, exclude: Sequence[Path] = ()) -> list[str]:
    """Uncommitted changes under `workspace` (staged, unstaged, untracked; ignored files do not
    count), as repository-relative paths. `exclude`: folders that do not count (`$LONGRUN_HOME`
    when it lies inside the repository: the stack's data and the runs' worktrees)."""
    top = Path(git(workspace, "rev-parse", "--show-toplevel")).resolve()
    skip = [e.resolve() for e in exclude if not workspace.resolve().is_relative_to(e.resolve())]  # never the workspace
    tokens = iter(git(workspace, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--", ".").split("\0"))
    out = []
    for token in tokens:
        if len(token) <= 3:
            continue
        if token[0] in "RC":
            next(tokens, None)  # a rename's or copy's source path follows
        path = token[3:]
        if not any((top / path).resolve().is_relative_to(e) for e in skip):
            out.append(path)
    return out


def open_change_set(workspace: Path, run_id: str, worktrees: Path) -> ChangeSet:
    """Create (or, on a retry, find) the run's branch and worktree.

    Raises:
        WorkspaceDirty: the workspace has uncommitted changes; the message lists them and says
            what to do.
        GitError: the branch name is refused, the workspace is not in HEAD, or git failed.
    """
    ws = workspace.resolve()
    top = Path(git(ws, "rev-parse", "--show-toplevel")).resolve()
    prefix = git(ws, "rev-parse", "--show-prefix").strip("/")
    branch = branch_for(run_id)
    if not git_ok(top, "check-ref-format", "--branch", branch):
        raise GitError(f"run id {run_id!r} does not make a valid branch name ({branch}); start the run with --in-place")
    tree = (worktrees / run_id).resolve()
    exists = git_ok(top, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}")
    if not exists:
        if not git_ok(top, "rev-parse", "--verify", "--quiet", "HEAD"):
            raise GitError(f"the repository {top} has no commit yet; commit the workspace first, or start with --in-place")
        if prefix and not git(top, "ls-tree", "-d", "HEAD", "--", prefix):
            raise GitError(f"the workspace {ws} is inside the git repository {top} but not in its HEAD commit; "
                           "commit it first, or start the run with --in-place")
        dirty = dirty_files(ws, exclude=[worktrees.parent])
        if dirty:
            listed = ", ".join(dirty[:MAX_DIRTY_LISTED]) + (f" and {len(dirty) - MAX_DIRTY_LISTED} more"
                                                          if len(dirty) > MAX_DIRTY_LISTED else "")
            raise WorkspaceDirty(
                f"the workspace {ws} has uncommitted changes ({len(dirty)}: {listed}); the run would work on a branch "
                f"from HEAD without them. Commit or stash them and start again, or start with --in-place to edit the "
                "folder itself"
            )
    base = git(top, "rev-parse", "--verify", f"{branch}^{{commit}}" if exists else "HEAD^{commit}")
    if not (tree / ".git").exists():
        tree.parent.mkdir(parents=True, exist_ok=True)
        git(top, "worktree", "prune")
        if exists:
            git(top, "worktree", "add", str(tree), branch)
        else:
            git(top, "worktree", "add", "-b", branch, str(tree), base)
    return ChangeSet(repo=str(top), branch=branch, base=base, worktree=str(tree),
                     workspace=str(tree / prefix) if prefix else str(tree))


def clear_stale_locks(worktree: Path, branch: str) -> list[str]:
    """Remove the lock files a git command killed midway left behind (its index lock, the
    branch's ref lock). Only this run commits in its worktree and on its branch, one tool call
    at a time, so a lock found when a call starts is stale."""
    removed = []
    gitdir = Path(git(worktree, "rev-parse", "--absolute-git-dir"))
    common = Path(git(worktree, "rev-parse", "--git-common-dir"))
    common = common if common.is_absolute() else (worktree / common).resolve()
    for lock in (gitdir / "index.lock", gitdir / "HEAD.lock", common / "refs" / "heads" / f"{branch}.lock"):
        with contextlib.suppress(FileNotFoundError):
            lock.unlink()
            removed.append(str(lock))
    return removed


def _addable(worktree: Path, paths: list[str]) -> list[str]:
    """The paths `git add -A` can take: those on disk, and those git tracks (a deletion)."""
    tracked = git(worktree, "ls-files", "-z", "--", *paths).split("\0") if paths else []
    out = []
    for p in paths:
        if os.path.lexists(worktree / p) or any(t == p or t.startswith(p.rstrip("/") + "/") for t in tracked if t):
            out.append(p)
    return out


def commit_message(tool: str, summary: str, trailers: Trailers) -> str:
    lines = [f"{tool}: {summary}"[:200], "", f"{ACTION_TRAILER}: {trailers.action_id}"]
    if trailers.action_hash:
        lines.append(f"Longrun-Action-Hash: {trailers.action_hash}")
    if trailers.approval_id:
        lines.append(f"Longrun-Approval: {trailers.approval_id}")
    if trailers.approver:
        lines.append(f"Longrun-Approver: {trailers.approver}")
    return "\n".join(lines) + "\n"


def commit_effect(worktree: Path, paths: list[str], tool: str, summary: str, trailers: Trailers) -> str:
    """Commit what an effect changed at `paths` (worktree-relative) and return the commit id.

    Only those paths are staged, so what a command left in the worktree (`__pycache__`, test
    output) never rides along. An effect that changed nothing git records (an empty directory,
    a write of the same bytes) still gets its commit (`--allow-empty`): the commit is the record
    that the effect was confirmed, which is what reconcile looks for.

    A path with a symlink in one of its components is refused (GitError) before anything is
    staged: committing `docs/guide.md -> ../conftest.py` would record the unchanged link while
    the file that changed stays uncommitted. The effect tools refuse such paths before they
    write (`check_write_path`); this is the change set's own guard of the same rule.

    Raises:
        GitError: a path goes through a symlink, or git failed.
    """
    root = worktree.resolve()
    for p in paths:
        parts = [c for c in PurePosixPath(p).parts if c not in ("", ".")]
        index = first_symlink(root, parts)
        if index is not None:
            raise GitError(f"refusing to commit {p!r}: {'/'.join(parts[:index + 1])!r} is a symlink, so the change "
                           "is not at that path; edit files by their own paths (effect tools refuse links)")
    addable = _addable(worktree, paths)
    if addable:
        git(worktree, "add", "-A", "--", *addable)
    name = "longrun"
    git(worktree, "-c", f"user.name={name}", "-c", "user.email=longrun@localhost", "commit", "--no-verify",
        "--allow-empty", "--quiet", "-F", "-", input_text=commit_message(tool, summary, trailers))
    return git(worktree, "rev-parse", "HEAD")


def find_commit(worktree: Path, base: str, action_id: str) -> str | None:
    """The commit on the worktree's branch (after `base`) whose trailer names `action_id`."""
    out = git(worktree, "log", "--format=%H%x00%(trailers:key=" + ACTION_TRAILER + ",valueonly)%x1e",
              f"{base}..HEAD")
    for record in out.split("\x1e"):
        sha, _, value = record.strip().partition("\0")
        if sha and value.strip() == action_id:
            return sha
    return None


def paths_clean(worktree: Path, paths: list[str]) -> bool:
    """Whether `paths` are exactly as the branch's last commit has them (nothing uncommitted)."""
    if not paths:
        return True
    return git(worktree, "status", "--porcelain=v1", "--untracked-files=all", "--", *paths) == ""


_SHA = re.compile(r"^[0-9a-f]{7,64}$")


def commits(repo: Path, change: ChangeSet) -> list[tuple[str, str]]:
    """(commit id, subject) of each commit of the change set, oldest first."""
    if not git_ok(repo, "rev-parse", "--verify", "--quiet", f"refs/heads/{change.branch}"):
        raise GitError(f"the branch {change.branch} is gone from {repo}; the change set cannot be shown")
    out = git(repo, "log", "--reverse", "--format=%H %s", f"{change.base}..refs/heads/{change.branch}")
    return [(line[:40], line[41:]) for line in out.splitlines() if _SHA.match(line[:40])]


def diff(repo: Path, change: ChangeSet, *, stat: bool = False) -> str:
    """The change set as a patch (what `git apply` takes), or its `--stat` summary."""
    args = ["diff", "--no-color", "--find-renames"]
    args += ["--stat"] if stat else ["--binary"]
    return git(repo, *args, change.base, f"refs/heads/{change.branch}") + "\n"


__all__ = [
    "ACTION_TRAILER", "BRANCH_PREFIX", "ChangeSet", "Trailers", "WorkspaceDirty", "branch_for", "clear_stale_locks",
    "commit_effect", "commit_message", "commits", "diff", "dirty_files", "find_commit", "is_git_workspace", "open_change_set",
    "paths_clean",
]
