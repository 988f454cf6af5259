"""`grep`: a Python regex over the workspace's text files, `relpath:lineno:line` per match.

The pattern is the model's, so it may backtrack catastrophically (`(a|aa)+$` on forty `a`s and a
`!`). It runs on the `regex` package rather than `re` for two reasons: `timeout=` stops a search
at the call's deadline (GREP_TIME_LIMIT seconds for the whole call), and `concurrent=True`
releases the GIL while it matches, so the activity's heartbeat thread and the other runs on the
worker keep going. `regex` takes `re`'s syntax (its VERSION0 default), so the tool's contract, "a
Python regular expression", holds; RE2 would have been linear but drops backreferences and
look-arounds, and a subprocess per call (ripgrep is not on every machine) costs a process per call.

Symlinked directories are not followed and symlinked files that resolve outside the workspace
are skipped, so a search never reads outside it. Binary files (a NUL byte in the first 8 KiB)
are skipped, and so are FIFOs, sockets and devices (`safe_open.open_regular`: opening a FIFO would
block for good); over-long lines are searched in their first MAX_LINE_BYTES bytes only. A hit in a
file that holds a private key shows `relpath:lineno:[REDACTED:private_key_file]`, never the line,
with one note per such file.
"""

from __future__ import annotations

import fnmatch
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import regex

from longrun.errors import NotRegularFile, ToolError
from longrun.redact_files import PRIVATE_KEY_FILE, file_holds_private_key, private_key_note
from longrun.tools._text import bounded_lines, decode, looks_binary
from longrun.tools.base import Tool, ToolContext, ToolOutcome
from longrun.tools.files import PATH_MAX, os_errors_as_tool_errors, path_check
from longrun.tools.paths import SKIP_DIRS, confine
from longrun.tools.safe_open import not_regular, open_regular, special_kind

MAX_MATCHES = 500
MAX_SHOWN_LINE = 1000
"""A matching line is shown up to this many characters."""
GREP_TIME_LIMIT = 10.0
"""Seconds one grep call may take, matching included; past it the call is an error for the model."""


def _too_slow(rel: str, lineno: int) -> ToolError:
    return ToolError(
        f"grep stopped after its {GREP_TIME_LIMIT:g} s limit (at {rel}:{lineno}): the pattern is too slow. "
        "Simplify it (no nested or overlapping repetition such as (a+)+ or (a|aa)+; anchor it or use a "
        "literal prefix) or narrow the path or the glob"
    )


def _files(root: Path, start: Path) -> Iterator[Path]:
    if start.is_file():
        yield start
        return
    for dirpath, dirnames, filenames in os.walk(start):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        for name in sorted(filenames):
            p = Path(dirpath) / name
            if p.is_symlink():
                try:
                    if not p.resolve().is_relative_to(root):
                        continue
                except (OSError, RuntimeError):
                    continue
            yield p


def _glob_matches(glob: str, rel: str) -> bool:
    if "/" in glob:
        return fnmatch.fnmatchcase(rel, glob)
    return fnmatch.fnmatchcase(rel.rsplit("/", 1)[-1], glob)


@os_errors_as_tool_errors
def _grep(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    path = args.get("path", ".")
    glob = args.get("glob")
    deadline = time.monotonic() + GREP_TIME_LIMIT
    try:
        rx = regex.compile(args["pattern"])
    except regex.error as exc:
        raise ToolError(f"'pattern' is not a valid Python regular expression: {exc}") from exc
    root = ctx.workspace.resolve()
    start = confine(ctx.workspace, path)
    if not start.exists():
        raise ToolError(f"no such file or directory {path!r} in the workspace")
    if (kind := special_kind(start)) is not None:
        raise not_regular(path, kind, "grep searches regular files and directories")
    out: list[str] = []
    capped = False
    key_files: list[str] = []
    for file in _files(root, start):
        rel = file.relative_to(root).as_posix()  # `start` is resolved and walks do not follow links
        if glob and not _glob_matches(glob, rel):
            continue
        try:
            # the real file, opened without following a link or blocking: a FIFO or socket is skipped
            with open_regular(file.resolve() if file.is_symlink() else file) as f:
                if looks_binary(f.read(8192)):
                    continue
                f.seek(0)
                first = len(out)
                for lineno, (raw, _cut) in enumerate(bounded_lines(f), start=1):
                    line, _ = decode(raw)
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise _too_slow(rel, lineno)
                    try:
                        found = rx.search(line, timeout=left, concurrent=True)
                    except TimeoutError:
                        raise _too_slow(rel, lineno) from None
                    if found:
                        if len(out) >= MAX_MATCHES:
                            capped = True
                            break
                        out.append(f"{rel}:{lineno}:{line[:MAX_SHOWN_LINE]}")
                if len(out) > first and file_holds_private_key(f, shown_until=f.tell()):
                    out[first:] = [hit[: hit.index(":", len(rel) + 1) + 1] + PRIVATE_KEY_FILE for hit in out[first:]]
                    key_files.append(rel)
        except (OSError, NotRegularFile):
            continue
        if capped:
            break
    out += [private_key_note(rel) for rel in key_files]
    if capped:
        out.append(f"[capped at {MAX_MATCHES} matches; narrow the pattern, the path or the glob]")
    if not out:
        out.append("[no matches]")
    return ToolOutcome(text="\n".join(out))


GREP = Tool(
    name="grep",
    description=(
        "Search the workspace's text files with a Python regular expression. One line per match: "
        f"relpath:lineno:line. At most {MAX_MATCHES} matches. path narrows to a directory or file, glob to "
        "file names (e.g. '*.py', or 'src/*/test_*.py' when it holds a '/')."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "minLength": 1, "maxLength": 2000, "description": "Python regex"},
            "path": {"type": "string", "maxLength": PATH_MAX, "default": ".", "description": "where to search"},
            "glob": {"type": "string", "maxLength": 500, "description": "file name pattern"},
        },
        "required": ["pattern"],
        "additionalProperties": False,
    },
    kind="read",
    run=_grep,
    check=path_check,
)
