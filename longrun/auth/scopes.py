"""Standing approvals (scopes): which one covers a call, and what a constraint set hashes to.

A scope covers a call when the tool is one it lists, every workspace path the call changes (a
move's source and destination, each file of a unified diff: `Tool.changed_paths`) matches one of
its globs, it has uses left, it has not expired or ended, and the run's constraints are still
the ones it was granted under. The globs are the shell's, on workspace-relative POSIX paths:
`*` and `?` stay inside one path segment, `**` spans segments (`src/**` is everything under
`src/`, `**/*.py` every Python file). Written here rather than with `fnmatch` (whose `*`
crosses `/`, so `src/*.py` would cover `src/a/b.py`) or `PurePath.full_match` (Python 3.13).
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import PurePosixPath

from longrun.errors import ConfigError
from longrun.models.canonical import canonical_json, sha256_hex
from longrun.models.state import Scope, TaskState

DEFAULT_SCOPE_MAX_TTL_SECONDS = 24 * 3600
MAX_TTL_VARIABLE = "LONGRUN_SCOPE_MAX_TTL"
"""The longest a scope may stand: a standing approval outlives the attention of whoever granted it,
so its lifetime has a ceiling (the worker's setting decides; the client checks it as a courtesy)."""
_DURATION = re.compile(r"^\s*(\d+)\s*([smhd]?)\s*$", re.IGNORECASE)
_UNIT = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}

PATH_ARGUMENT = "path"
"""The argument that names the file an edit tool changes, when the tool declares no other
(`Tool.paths`: move_path's `to` and a diff's files count too)."""


@functools.lru_cache(maxsize=256)
def _glob_regex(glob: str) -> re.Pattern[str]:
    out, i = [], 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def normal_path(path: str) -> str | None:
    """A workspace-relative POSIX path with `.` segments removed; None for an absolute path or
    one that climbs out (the tool's own confinement check refuses those anyway)."""
    p = PurePosixPath(path.replace("\\", "/"))
    if p.is_absolute() or ".." in p.parts:
        return None
    return "/".join(part for part in p.parts if part != ".")


def path_matches(path: str, glob: str) -> bool:
    normal = normal_path(path)
    return normal is not None and _glob_regex(glob.strip("/")).match(normal) is not None


def check_glob(glob: str) -> str | None:
    """Why `glob` cannot be a scope's path (None: it can)."""
    if not glob or glob.startswith("/") or ".." in PurePosixPath(glob).parts:
        return f"path glob {glob!r} must be relative to the workspace and stay inside it"
    return None


def max_ttl_setting(value: str | None) -> int:
    """`LONGRUN_SCOPE_MAX_TTL` as seconds: a positive number with s, m, h or d (default 24h).

    Raises:
        ConfigError: anything else (the message says what is accepted)."""
    if value is None or not value.strip():
        return DEFAULT_SCOPE_MAX_TTL_SECONDS
    m = _DURATION.match(value)
    if not m or int(m.group(1)) <= 0:
        raise ConfigError(f"{MAX_TTL_VARIABLE}={value!r}: use a positive number with s, m, h or d (e.g. 8h, 1d)")
    return int(m.group(1)) * _UNIT[m.group(2).lower()]


def max_ttl_from_env() -> int:
    """The ceiling this process is configured with (the client's view; the worker has its own)."""
    return max_ttl_setting(os.environ.get(MAX_TTL_VARIABLE))


def show_seconds(seconds: int) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def ttl_refusal(ttl_seconds: int, max_ttl_seconds: int) -> str | None:
    """Why a scope may not stand this long (None: it may). A signed scope is refused rather
    than shortened: the signature covers its expiry."""
    if ttl_seconds <= max_ttl_seconds:
        return None
    return (f"a scope of {show_seconds(ttl_seconds)} is longer than the longest a scope may stand "
            f"({show_seconds(max_ttl_seconds)}, {MAX_TTL_VARIABLE} on the worker): grant a shorter --ttl, and grant "
            "again when it ends")


def constraints_sha256(constraints: Sequence[str]) -> str:
    """What a scope remembers of the constraints it was granted under."""
    return sha256_hex(canonical_json(list(constraints)))


def covering_scope(
    state: TaskState, tool: str, arguments: dict[str, object], now: datetime, paths: Sequence[str] | None = None,
    key_refusal: Callable[[Scope], str | None] | None = None, closed: Sequence[Scope] = (),
) -> tuple[Scope | None, str]:
    """The scope that covers this call now, else None and why none does ('' when no scope even
    names the tool and paths, so the gate's usual reason stands).

    Args:
        paths: every workspace path the call changes (`Tool.changed_paths`: a move's source *and*
            destination, each file of a diff); one scope must cover all of them. Default: the
            `path` argument.
        key_refusal: why a scope's signing key no longer vouches for it (None: it does); asked
            only of a scope that would otherwise cover the call (`longrun.auth.key_status`).
        closed: the run's closed scopes (moved out of the state: ended, used up, long expired);
            they cover nothing, but say why a scope naming the call does not.
    """
    if paths is None:
        path = arguments.get(PATH_ARGUMENT)
        paths = [path] if isinstance(path, str) else []
    if not paths:
        return None, ""
    current = constraints_sha256(state.constraints)
    reasons = []
    for scope in [*closed, *state.scopes]:
        if tool not in scope.tools or not all(any(path_matches(p, g) for g in scope.paths) for p in paths):
            continue
        refusal = scope.refusal(now, current)
        if refusal is None and scope in closed:
            refusal = f"scope {scope.id} is closed"
        if refusal is None and key_refusal is not None:
            refusal = key_refusal(scope)
        if refusal is None:
            return scope, ""
        reasons.append(refusal)
    return None, "; ".join(reasons)


__all__ = [
    "DEFAULT_SCOPE_MAX_TTL_SECONDS",
    "MAX_TTL_VARIABLE",
    "PATH_ARGUMENT",
    "check_glob",
    "constraints_sha256",
    "covering_scope",
    "max_ttl_from_env",
    "max_ttl_setting",
    "normal_path",
    "path_matches",
    "show_seconds",
    "ttl_refusal",
]
