"""`grep`: a Python regex over the workspace's text files, `relpath:lineno:line` per match.

Symlinked directories are not followed and symlinked files that resolve outside the workspace
are skipped, so a search never reads outside it. Binary files (a NUL byte in the first 8 KiB)
are skipped; over-long lines are searched in their first MAX_LINE_BYTES bytes only.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from longrun.errors import ToolError
from longrun.tools._text import bounded_lines, decode, looks_binary
from longrun.tools.base import Tool, ToolContext, ToolOutcome
from longrun.tools.files import PATH_MAX, _path_check, os_errors_as_tool_errors
from longrun.tools.paths import SKIP_DIRS, confine

MAX_MATCHES = 500
MAX_SHOWN_LINE = 1000
"""A matching line is shown up to this many characters."""


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
    try:
        regex = re.compile(args["pattern"])
    except re.error as exc:
        raise ToolError(f"'pattern' is not a valid Python regular expression: {exc}") from exc
    root = ctx.workspace.resolve()
    start = confine(ctx.workspace, path)
    if not start.exists():
        raise ToolError(f"no such file or directory {path!r} in the workspace")
    out: list[str] = []
    capped = False
    for file in _files(root, start):
        rel = file.relative_to(root).as_posix()  # `start` is resolved and walks do not follow links
        if glob and not _glob_matches(glob, rel):
            continue
        try:
            with file.open("rb") as f:
                if looks_binary(f.read(8192)):
                    continue
                f.seek(0)
                for lineno, (raw, _cut) in enumerate(bounded_lines(f), start=1):
                    line, _ = decode(raw)
                    if regex.search(line):
                        if len(out) >= MAX_MATCHES:
                            capped = True
                            break
                        out.append(f"{rel}:{lineno}:{line[:MAX_SHOWN_LINE]}")
        except OSError:
            continue
        if capped:
            break
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
    check=_path_check,
)
