"""Files that run code: what an approver must read twice before approving an edit.

An edit to one of these is an edit to a program: `conftest.py` runs on the allow-listed
`python -m pytest -q`, a `*.pth` file runs on every start of the interpreter, a Makefile runs on
`make`, a CI workflow runs on the next push. `runs_code(path)` says why a path is one; the approval
preview (`longrun status`, `watch`, `show`) flags it.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from longrun.errors import NotRegularFile, ToolError
from longrun.tools import udiff
from longrun.tools.safe_open import read_regular

RUNS_CODE_NAMES: dict[str, str] = {
    "conftest.py": "pytest imports it before any test runs",
    "pytest.ini": "pytest reads it: plugins, addopts, python paths",
    "pyproject.toml": "build backends, pytest, tox and many tools read it (plugins, build hooks, commands)",
    "setup.cfg": "setuptools and pytest read it (entry points, addopts)",
    "setup.py": "runs on install and on most packaging commands",
    "tox.ini": "tox runs the commands it lists",
    "noxfile.py": "nox runs it",
    "sitecustomize.py": "the interpreter imports it on start-up when it is on the path",
    "usercustomize.py": "the interpreter imports it on start-up when it is on the path",
    "__main__.py": "runs on `python -m <package>`",
    "makefile": "make runs it",
    "gnumakefile": "make runs it",
    "justfile": "just runs it",
    "package.json": "npm runs its scripts (install hooks, test)",
    "dockerfile": "docker build runs it",
    ".envrc": "direnv runs it when a shell enters the directory",
    ".pre-commit-config.yaml": "pre-commit runs its hooks on `git commit`",
    ".gitlab-ci.yml": "GitLab CI runs it on the next push",
    ".travis.yml": "Travis CI runs it on the next push",
    "jenkinsfile": "Jenkins runs it",
    "azure-pipelines.yml": "Azure Pipelines runs it on the next push",
    ".gitattributes": "git runs the filters and diff drivers it names",
}
"""File names (lower case) that run code wherever they are."""

RUNS_CODE_SUFFIXES: dict[str, str] = {
    ".pth": "the interpreter runs its `import` lines on every start-up when it is in site-packages",
}

RUNS_CODE_DIRS: dict[str, str] = {
    ".github/workflows": "GitHub Actions runs it on the next push",
    ".circleci": "CircleCI runs it on the next push",
    ".husky": "git runs it as a hook (husky sets core.hooksPath)",
    ".git": "git runs what is in hooks/ and reads config, which can name programs",
    ".vscode": "the editor runs its tasks and launch configurations",
    ".idea": "the IDE runs its run configurations",
    ".devcontainer": "the dev container runs its commands on start",
}
"""Directories (lower case, relative to any component) whose files run code."""

PATH_ARGUMENTS = ("path", "paths", "to")
"""The arguments of a tool call that name files it writes (`to`: move_path's destination; an
apply_patch `diff` names its files in its headers, which `paths_in` reads too)."""


def runs_code(path: str) -> str | None:
    """Why a file at `path` (relative to the workspace) runs code, or None when nothing runs it."""
    parts = [p.lower() for p in PurePosixPath(path.replace("\\", "/")).parts if p not in ("", ".")]
    if not parts:
        return None
    name = parts[-1]
    if name in RUNS_CODE_NAMES:
        return RUNS_CODE_NAMES[name]
    for suffix, why in RUNS_CODE_SUFFIXES.items():
        if name.endswith(suffix):
            return why
    joined = "/".join(parts[:-1])
    for directory, why in RUNS_CODE_DIRS.items():
        if f"/{directory}/" in f"/{joined}/":
            return why
    return None


def paths_in(arguments: dict[str, Any]) -> list[str]:
    """The paths a tool call names (`path`, `paths`, `to`, and the files of a unified `diff`)."""
    found: list[str] = []
    for key in PATH_ARGUMENTS:
        value = arguments.get(key)
        values: Iterable[Any] = value if isinstance(value, list) else [value]
        found += [v for v in values if isinstance(v, str) and v]
    if isinstance(arguments.get("diff"), str):
        with contextlib.suppress(ToolError):  # a diff that does not parse is refused by the gate
            found += [f.path for f in udiff.parse(arguments["diff"]) if f.path not in found]
    return found


def runs_code_warnings(arguments: dict[str, Any]) -> list[tuple[str, str]]:
    """(path, why) for each path of a call that names a file that runs code."""
    return [(p, why) for p in paths_in(arguments) if (why := runs_code(p)) is not None]


AUTORUN_PATHS: tuple[str, ...] = (".git", ".husky", ".pre-commit-config.yaml", ".envrc", ".vscode", ".github/workflows")
"""Paths that git, a shell or an editor runs without anyone asking: git hooks and config, husky
hooks, pre-commit's config, direnv's `.envrc`, editor tasks, CI workflows. Effect tools refuse to
write them (at any depth, compared case-insensitively) unless the run spec names them in
`allow_autorun_paths`; a command's sandbox binds the existing ones read-only."""

GIT_HOOKS: frozenset[str] = frozenset({
    "applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit", "pre-merge-commit", "prepare-commit-msg",
    "commit-msg", "post-commit", "pre-rebase", "post-checkout", "post-merge", "pre-push", "pre-receive", "update",
    "proc-receive", "post-receive", "post-update", "reference-transaction", "push-to-checkout", "pre-auto-gc",
    "post-rewrite", "sendemail-validate", "fsmonitor-watchman", "p4-changelist", "p4-prepare-changelist",
    "p4-post-changelist", "p4-pre-submit", "post-index-change",
})
"""The file names git runs as hooks (githooks(5))."""

_IGNORABLE = re.compile("[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]")
"""Code points HFS+ ignores in names (git's `is_hfs_dotgit`): `.g\u200cit` is `.git` there."""

GIT_TIMEOUT = 5.0
MAX_CONFIG_BYTES = 1_000_000
"""A git config larger than this is not parsed for core.hooksPath (git itself is asked first)."""


def fold(component: str) -> str:
    """A path component as a case-insensitive, HFS+ or NTFS filesystem sees it: lower case, without
    the code points HFS+ ignores, without NTFS's trailing dots and spaces, `git~1` as `.git`."""
    folded = _IGNORABLE.sub("", component).lower().rstrip(". ")
    return ".git" if folded == "git~1" else folded


def _git(workspace: Path, *args: str) -> str | None:
    """`git -C workspace ARGS` with only the repository's own config (no system or global file,
    any owner accepted); None when git is missing, fails or says nothing."""
    if shutil.which("git") is None:
        return None
    env = {"PATH": os.environ.get("PATH", os.defpath), "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
           "HOME": os.devnull, "LANG": "C"}
    try:
        done = subprocess.run(["git", "-C", str(workspace), "-c", "safe.directory=*", *args], env=env,
                              capture_output=True, text=True, timeout=GIT_TIMEOUT, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    out = done.stdout.strip()
    return out if done.returncode == 0 and out else None


def _parse_hooks_path(config: Path) -> str | None:
    """core.hooksPath from a git config file, without git (no includes, the last value wins)."""
    try:
        data = read_regular(config, MAX_CONFIG_BYTES)  # a FIFO planted as .git/config must not block
    except (OSError, NotRegularFile):
        return None
    if data is None:
        return None
    text = data.decode("utf-8", errors="replace")
    section, found = "", None
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].split(";", 1)[0].strip()
        if line.startswith("["):
            section = line.strip("[]").strip().lower()
        elif section == "core" and "=" in line:
            key, value = (x.strip() for x in line.split("=", 1))
            if key.lower() == "hookspath":
                found = value.strip('"')
    return found


def git_hooks_dir(workspace: Path) -> Path | None:
    """The directory git runs hooks from when `core.hooksPath` is set for the workspace's
    repository (resolved; it may lie outside the workspace), else None (`.git/hooks`, which
    `.git` covers)."""
    root = workspace.resolve()
    value = _git(root, "config", "--includes", "--get", "core.hooksPath")
    top = _git(root, "rev-parse", "--show-toplevel") if value else None
    if value is None and (root / ".git").is_dir():
        value = _parse_hooks_path(root / ".git" / "config")
    if not value:
        return None
    base = Path(top) if top else root
    hooks = Path(os.path.expanduser(value))
    return (hooks if hooks.is_absolute() else base / hooks).resolve()


def _normal(entry: str) -> str:
    return PurePosixPath(entry.replace("\\", "/").strip()).as_posix().removeprefix("./").rstrip("/")


def _allowed(rel: str, allow: Sequence[str]) -> bool:
    for entry in (_normal(e) for e in allow):
        if entry and entry != "." and (rel == entry or rel.startswith(entry + "/")):
            return True
    return False


def autorun_refusal(workspace: Path, resolved: Path, allow: Sequence[str] = ()) -> str | None:
    """Why an effect tool may not write `resolved` (inside `workspace`), or None.

    Refused: anything under `.git` (any depth; `.GIT`, `.git.`, `git~1` and HFS+-ignorable spellings
    too), under one of the other `AUTORUN_PATHS` (compared case-insensitively), and under the
    repository's `core.hooksPath` (a hook name when that is the workspace itself) -- unless the run
    spec names the path, or a directory holding it, in `allow_autorun_paths`.
    """
    root = workspace.resolve()
    parts = resolved.relative_to(root).parts
    rel = "/".join(parts)
    folded = [fold(p) for p in parts]
    hit: str | None = None
    if ".git" in folded:
        hit = ".git"
    else:
        for entry in AUTORUN_PATHS[1:]:
            want = entry.split("/")
            if any(folded[i:i + len(want)] == want for i in range(len(folded) - len(want) + 1)):
                hit = entry
                break
    why = runs_code(rel) or "it runs on its own"
    if hit is None:
        hooks = git_hooks_dir(root)
        if hooks is not None and resolved.is_relative_to(hooks):
            inside = hooks != root and hooks.is_relative_to(root)
            if inside or (resolved.parent == hooks and resolved.name in GIT_HOOKS):
                hit, why = f"the repository's core.hooksPath ({hooks})", "git runs the hooks there"
    if hit is None or _allowed(rel, allow):
        return None
    return (
        f"{rel!r} lies under {hit} ({why}), which tools may not write to: a file that runs on its own; a run "
        f"spec can allow it by name (allow_autorun_paths: [{rel!r}])"
    )


def existing_autorun_paths(workspace: Path) -> list[Path]:
    """The auto-run paths that exist in `workspace` (resolved, inside it), the hooksPath included:
    a command's sandbox binds them read-only, so a command cannot plant a hook that runs later
    outside any sandbox."""
    root = workspace.resolve()
    found: list[Path] = []
    candidates = [root / rel for rel in AUTORUN_PATHS]
    hooks = git_hooks_dir(root)
    if hooks is not None:
        candidates.append(hooks)
    for path in candidates:
        if path.is_symlink() or not path.exists():
            continue
        real = path.resolve()
        if real.is_relative_to(root) and real != root and real not in found:
            found.append(real)
    return found
