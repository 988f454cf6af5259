"""File tools: `list_dir` and `read_file` (read), `write_file` (effect), and the helpers the other
file effects share (`apply_patch` is in `patch`, `move_path`/`delete_path`/`make_dir`/`glob` in `fs_tools`).

Output formats are a contract (the scripted agent parses them):
- list_dir: one entry per line, sorted, directories end with "/".
- read_file: `f"{lineno:>6}\\t{text}"` per line, like `cat -n`.
Both add notes as lines in square brackets (`[truncated: ...]`, `[invalid UTF-8: ...]`). A file that
holds a private key is shown as `[REDACTED:private_key_file]` and a note, whatever the offset
(`longrun.redact_files.file_holds_private_key`).

Writes are atomic (a temporary file in the same directory, then `os.replace`), so after a crash
the target holds either the old bytes or the new ones; that is what makes their reconcile
functions decidable.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from longrun.errors import ToolError
from longrun.models.state import NextAction
from longrun.redact_files import PRIVATE_KEY_FILE, file_holds_private_key, private_key_note
from longrun.tools._text import MAX_LINE_BYTES, bounded_lines, decode, looks_binary
from longrun.tools.base import ReconcileOutcome, Tool, ToolContext, ToolOutcome
from longrun.tools.paths import SKIP_DIRS, check_write_path, confine, relative
from longrun.tools.safe_open import kind_of, open_dir_nofollow, open_regular, read_regular

PATH_MAX = 4096
DEFAULT_READ_LINES = 2000
MAX_READ_BYTES = 1_000_000
"""read_file returns at most this many bytes of file content, whatever the file's size."""
MAX_LIST_ENTRIES = 5000
MAX_WRITE_CHARS = 2_000_000
MAX_PATCH_FILE_BYTES = 20_000_000

EDIT_ACTIONS = frozenset({NextAction.edit})
"""The file effects (write_file, apply_patch, move_path, delete_path, make_dir) run only when the
state says the run is editing."""

MISSING = "missing"


def path_prop(description: str, default: str | None = None) -> dict[str, Any]:
    prop: dict[str, Any] = {"type": "string", "maxLength": PATH_MAX, "description": description}
    if default is not None:
        prop["default"] = default
    return prop


def file_sha256(path: Path) -> str:
    """The hex sha256 of a regular file (`open_regular`: a FIFO or a device raises at once)."""
    h = hashlib.sha256()
    with open_regular(path) as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def content_fingerprint(path: Path) -> str:
    """`sha256:<hex>` of a file, `missing`, `directory`, or `special:<kind>` for a FIFO, a
    socket or a device (never opened: opening a FIFO blocks)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return MISSING
    if stat.S_ISDIR(mode):
        return "directory"
    if not stat.S_ISREG(mode):
        return "special:" + kind_of(mode)
    return "sha256:" + file_sha256(path)


def atomic_write(path: Path, data: bytes) -> None:
    """Write `data` to `path` (absolute, resolved, checked) through a temporary file and a rename
    in the same directory. The directory is opened from `/` with `O_NOFOLLOW` on every component
    and the rename is relative to it, so a symlink swapped in after the check fails the write
    rather than redirecting it."""
    dir_fd = open_dir_nofollow(path.parent, create=True)
    try:
        try:
            mode: int | None = os.lstat(path.name, dir_fd=dir_fd).st_mode
        except FileNotFoundError:
            mode = None
        if mode is not None and stat.S_ISLNK(mode):
            raise OSError(f"{path.name} became a symlink after the check; nothing was written")
        tmp = f".longrun-{secrets.token_hex(8)}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dir_fd)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                if mode is not None and stat.S_ISREG(mode):
                    os.fchmod(f.fileno(), mode & 0o7777)
                os.fsync(f.fileno())
            os.replace(tmp, path.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp, dir_fd=dir_fd)
            raise
    finally:
        os.close(dir_fd)


def os_errors_as_tool_errors(
    fn: Callable[[dict[str, Any], ToolContext], ToolOutcome],
) -> Callable[[dict[str, Any], ToolContext], ToolOutcome]:
    """Turn an OSError (permissions, a file where a directory should be) into a ToolError for the
    model instead of a crashed activity."""

    @functools.wraps(fn)
    def wrapper(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        try:
            return fn(args, ctx)
        except OSError as exc:
            where = f" ({args['path']!r})" if isinstance(args.get("path"), str) else ""
            raise ToolError(f"{fn.__name__.lstrip('_')} failed{where}: {exc.strerror or exc}") from exc

    return wrapper


def path_check(args: dict[str, Any], ctx: ToolContext) -> str | None:
    try:
        confine(ctx.workspace, args.get("path", "."))
    except ToolError as exc:
        return str(exc)
    return None


def _write_check(args: dict[str, Any], ctx: ToolContext) -> str | None:
    try:
        check_write_path(ctx.workspace, args.get("path", ""), allow=ctx.allow_autorun_paths)
    except ToolError as exc:
        return str(exc)
    return None


# --- list_dir ---------------------------------------------------------------------------------


@os_errors_as_tool_errors
def _list_dir(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    path = args.get("path", ".")
    target = confine(ctx.workspace, path)
    if not target.exists():
        raise ToolError(f"no such directory {path!r} in the workspace")
    if not target.is_dir():
        raise ToolError(f"{path!r} is a file, not a directory; use read_file")
    entries = []
    for entry in os.scandir(target):
        if entry.name in SKIP_DIRS:
            continue
        entries.append(entry.name + "/" if entry.is_dir() else entry.name)
    entries.sort()
    lines = entries[:MAX_LIST_ENTRIES]
    if len(entries) > MAX_LIST_ENTRIES:
        lines.append(f"[truncated: {len(entries)} entries, showing the first {MAX_LIST_ENTRIES}]")
    if not entries:
        lines.append("[empty directory]")
    return ToolOutcome(text="\n".join(lines))


LIST_DIR = Tool(
    name="list_dir",
    description=(
        "List one directory of the workspace: one entry per line, sorted, directories end with '/'. "
        ".git, __pycache__ and .venv are skipped."
    ),
    input_schema={
        "type": "object",
        "properties": {"path": path_prop("directory relative to the workspace", ".")},
        "additionalProperties": False,
    },
    kind="read",
    run=_list_dir,
    check=path_check,
)


# --- read_file --------------------------------------------------------------------------------


@os_errors_as_tool_errors
def _read_file(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    path = args["path"]
    offset = args.get("offset", 1)
    limit = args.get("limit", DEFAULT_READ_LINES)
    target = confine(ctx.workspace, path)
    if not target.exists():
        raise ToolError(f"no such file {path!r} in the workspace; list_dir shows what exists")
    if target.is_dir():
        raise ToolError(f"{path!r} is a directory; use list_dir")
    out: list[str] = []
    repaired = cut_lines = False
    budget = MAX_READ_BYTES
    stopped_at: int | None = None  # first line not shown although the file goes on
    lineno = 0
    with open_regular(target, path) as f:
        binary = looks_binary(f.read(8192))
        f.seek(0)
        for lineno, (raw, cut) in enumerate(bounded_lines(f), start=1):
            if lineno < offset:
                continue
            if len(out) >= limit or len(raw) > budget:
                stopped_at = lineno
                break
            budget -= len(raw) + 1
            text, bad = decode(raw)
            repaired |= bad
            cut_lines |= cut
            out.append(f"{lineno:>6}\t{text}" + (" [line truncated]" if cut else ""))
        if out and file_holds_private_key(f, shown_until=f.tell()):
            return ToolOutcome(text=f"{PRIVATE_KEY_FILE}\n{private_key_note(path)}")
    notes: list[str] = []
    if binary:
        notes.append("[binary file: it contains NUL bytes; shown decoded as UTF-8 with replacement characters]")
    elif repaired:
        notes.append("[invalid UTF-8: undecodable bytes are shown as U+FFFD replacement characters]")
    if cut_lines:
        notes.append(f"[lines longer than {MAX_LINE_BYTES} bytes were cut]")
    if stopped_at is not None:
        why = f"the {limit}-line limit" if len(out) >= limit else f"the {MAX_READ_BYTES}-byte output cap"
        notes.append(f"[truncated at {why}; the file goes on: call read_file with offset={stopped_at}]")
    if not out:
        notes.insert(0, "[empty file]" if lineno == 0 else f"[offset {offset} is past the end of the file ({lineno} lines)]")
    return ToolOutcome(text="\n".join(out + notes))


READ_FILE = Tool(
    name="read_file",
    description=(
        "Read a text file of the workspace. Lines come numbered like `cat -n` (6-wide line number, a tab, "
        "the text). offset is the first line (1-based), limit the number of lines (default 2000)."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "path": path_prop("file relative to the workspace"),
            "offset": {"type": "integer", "minimum": 1, "description": "first line to show, 1-based"},
            "limit": {"type": "integer", "minimum": 1, "maximum": 100_000, "description": "lines to show"},
        },
        "required": ["path"],
        "additionalProperties": False,
    },
    kind="read",
    run=_read_file,
    check=path_check,
)


# --- write_file -------------------------------------------------------------------------------


@os_errors_as_tool_errors
def _write_file(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    target = check_write_path(ctx.workspace, args["path"], allow=ctx.allow_autorun_paths)
    if target.is_dir():
        raise ToolError(f"{args['path']!r} is a directory; name a file")
    data = args["content"].encode("utf-8")
    atomic_write(target, data)
    digest = hashlib.sha256(data).hexdigest()
    rel = relative(ctx.workspace, target)
    return ToolOutcome(text=f"wrote {len(data)} bytes to {rel} (sha256 {digest})", external_id=digest)


def _target_fingerprint(args: dict[str, Any], ctx: ToolContext) -> str | None:
    """The fingerprint of the file an edit (write_file, apply_patch) targets, before the edit."""
    return content_fingerprint(check_write_path(ctx.workspace, args["path"], allow=ctx.allow_autorun_paths))


def _write_reconcile(args: dict[str, Any], ctx: ToolContext) -> ReconcileOutcome:
    try:
        target = check_write_path(ctx.workspace, args["path"], allow=ctx.allow_autorun_paths)
    except ToolError as exc:
        return ReconcileOutcome("undecidable", detail=f"cannot inspect the target: {exc}")
    intended = hashlib.sha256(args["content"].encode("utf-8")).hexdigest()
    current = content_fingerprint(target)
    if current == "sha256:" + intended:
        return ReconcileOutcome("confirmed", external_id=intended, detail="the file holds the intended content")
    if current == MISSING:
        return ReconcileOutcome("none", detail="the file does not exist, so the write did not happen")
    if ctx.before is not None and current == ctx.before:
        return ReconcileOutcome("none", detail="the file is unchanged since the intent was written")
    if ctx.before is None:
        return ReconcileOutcome(
            "undecidable",
            detail="the file differs from the intended content and no pre-write fingerprint was recorded",
        )
    return ReconcileOutcome(
        "undecidable", detail="the file differs both from the intended content and from what it was before"
    )


WRITE_FILE = Tool(
    name="write_file",
    description=(
        "Create or overwrite a file of the workspace with the given UTF-8 content (parent directories are "
        "created). Needs a human's approval. Paths are relative to the workspace and may not contain '..', "
        "lie under .git or go through a symlink (edit a link's target by its own path)."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "path": path_prop("file relative to the workspace"),
            "content": {"type": "string", "maxLength": MAX_WRITE_CHARS, "description": "the whole new content"},
        },
        "required": ["path", "content"],
        "additionalProperties": False,
    },
    kind="effect",
    needs_approval=True,
    run=_write_file,
    check=_write_check,
    reconcile=_write_reconcile,
    fingerprint=_target_fingerprint,
    allowed_next_actions=EDIT_ACTIONS,
    commits=True,
)


# --- helpers of apply_patch (longrun.tools.patch) -----------------------------------------------


def count_occurrences(text: str, sub: str) -> int:
    """How often `sub` occurs in `text`, in linear time: 0 and 1 are exact with overlapping
    occurrences included ("aa" is not once in "aaa"); a larger number counts the non-overlapping
    ones. That is what "exactly once" needs; counting every overlapping occurrence with a find
    loop is O(n*m) on periodic text ("a" * m in "a" * n)."""
    if not sub:
        return 0
    n = text.count(sub)
    if n == 1 and text.find(sub, text.find(sub) + 1) != -1:
        return 2
    return n


def read_text_for_patch(target: Path, path: str) -> str:
    """The text of the regular file apply_patch edits (opened without blocking or following a
    link: `safe_open.read_regular`)."""
    try:
        data = read_regular(target, MAX_PATCH_FILE_BYTES, path)
    except FileNotFoundError:
        raise ToolError(f"no such file {path!r} in the workspace; apply_patch edits existing files") from None
    if data is None:
        raise ToolError(
            f"{path!r} is larger than {MAX_PATCH_FILE_BYTES} bytes; apply_patch will not load it: "
            "change it with a command the run allows, or ask for the edit to be made by hand"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolError(f"{path!r} is not valid UTF-8 text; apply_patch edits text files only") from exc
