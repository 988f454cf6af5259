"""The `git` binary, called the one way longrun calls it.

Why the binary through `subprocess` and not GitPython or pygit2: a worktree, a commit with
trailers and a diff are five plumbing commands, the binary is on every machine that has a git
repository to protect, and its behaviour is the one the user's own `git log` shows (no second
implementation of the index to disagree with). No new dependency.

Every call is hardened against the repository it runs in, because that repository is the user's
and the run may have edited files in its worktree:
- hooks never run (`core.hooksPath=/dev/null` plus `--no-verify` on commit): a hook is code the
  run's edits could have planted outside the gate (the gate refuses `.git/` and the hooks path,
  and this is the second line);
- no fsmonitor, pager, editor, credential prompt or commit signing;
- pathspecs are literal (`--literal-pathspecs`): a file named `*` is that file.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from longrun.errors import ConfigError

GIT_TIMEOUT = 60.0
HARDENING = (
    "-c", "core.hooksPath=/dev/null",
    "-c", "core.fsmonitor=false",
    "-c", "commit.gpgsign=false",
    "-c", "core.pager=cat",
    "-c", "advice.detachedHead=false",
)
LITERAL = ("--literal-pathspecs",)


class GitError(ConfigError):
    """A git command failed; the message holds its stderr and says what to do."""


def git_binary() -> str | None:
    return shutil.which("git")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update({"GIT_TERMINAL_PROMPT": "0", "GIT_EDITOR": "true", "GIT_PAGER": "cat", "LC_ALL": "C"})
    return env


def git(cwd: Path, *args: str, check: bool = True, input_text: str | None = None) -> str:
    """Run `git ARGS` in `cwd` and return its stdout (stripped of the final newline).

    Raises:
        GitError: git is not installed, or (with `check`) the command failed.
    """
    binary = git_binary()
    if binary is None:
        raise GitError("the git binary is not on PATH; install git, or start the run with --in-place")
    try:
        proc = subprocess.run(
            [binary, *HARDENING, *LITERAL, *args], cwd=cwd, capture_output=True, text=True, timeout=GIT_TIMEOUT,
            env=_env(), input=input_text,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitError(f"git {args[0]} in {cwd} failed: {exc}") from exc
    if check and proc.returncode != 0:
        raise GitError(f"git {' '.join(args[:2])} in {cwd} failed (exit {proc.returncode}): {proc.stderr.strip()[:800]}")
    return proc.stdout.rstrip("\n")


def git_ok(cwd: Path, *args: str, literal: bool = True) -> bool:
    """Whether `git ARGS` exits 0 (for questions: is this a repository, does the ref exist).
    `literal=False` for the commands that refuse literal pathspecs (`check-ignore`)."""
    if git_binary() is None or not cwd.is_dir():
        return False
    hardening = (*HARDENING, *LITERAL) if literal else HARDENING
    try:
        proc = subprocess.run([git_binary() or "git", *hardening, *args], cwd=cwd, capture_output=True,
                              timeout=GIT_TIMEOUT, env=_env())
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0


def in_work_tree(path: Path) -> bool:
    """Whether `path` is inside a git work tree (not merely inside a `.git` directory)."""
    return path.is_dir() and git_ok(path, "rev-parse", "--is-inside-work-tree") and \
        git(path, "rev-parse", "--is-inside-work-tree", check=False) == "true"


__all__ = ["GIT_TIMEOUT", "GitError", "git", "git_binary", "git_ok", "in_work_tree"]
