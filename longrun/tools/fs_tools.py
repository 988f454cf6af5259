"""The file tools a refactor needs besides editing text: `glob` (read), and `move_path`,
`delete_path`, `make_dir` (effects).

`glob` matches with the scopes' globs (`longrun.auth.scopes`: `*` and `?` inside one segment, `**`
across), so what `glob 'src/**/*.py'` lists is exactly what a scope with that glob covers.

The three effects follow write_file's contract: confined by `check_write_path` (no `..`, nothing
under `.git`, no file that runs on its own unless the spec allows it), under `next_action edit`,
each needing a human's approval or a scope covering *every* path it changes (a move's source
and destination), and each made decidable after a crash:
- `move_path` is one `os.rename` (atomic on one filesystem): the source or the destination holds
  the thing, never both or neither; the fingerprint of the source tells it is the same thing;
- `delete_path` of a directory first renames it aside (atomic), then removes the renamed tree: a
  crash leaves the path either there whole or gone, and reconcile finishes a half-removed tree;
- `make_dir`: the directory exists or it does not.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path
from typing import Any

from longrun.auth.scopes import path_matches
from longrun.errors import ToolError
from longrun.tools.base import ReconcileOutcome, Tool, ToolContext, ToolOutcome
from longrun.tools.files import EDIT_ACTIONS, MISSING, file_sha256, os_errors_as_tool_errors, path_check, path_prop
from longrun.tools.paths import SKIP_DIRS, check_write_path, confine, relative
from longrun.tools.safe_open import special_kind

MAX_GLOB_ENTRIES = 5000
MAX_TREE_FILES = 20_000
"""A directory larger than this gets no content fingerprint (reconcile then goes by presence)."""
TRASH_PREFIX = ".longrun-deleting-"


def tree_fingerprint(path: Path) -> str:
    """`sha256:<hex>` of a file, `tree:<hex>` over a directory's relative paths and file hashes,
    `tree:large` past `MAX_TREE_FILES`, `special:<kind>` for a FIFO, socket or device, or `missing`.
    Special files are never opened (a FIFO blocks): inside a tree they count by name and kind."""
    if not os.path.lexists(path):
        return MISSING
    if path.is_symlink():
        return "link:" + hashlib.sha256(os.readlink(path).encode()).hexdigest()
    if not path.is_dir():
        kind = special_kind(path)
        return "special:" + kind if kind else "sha256:" + file_sha256(path)
    h = hashlib.sha256()
    count = 0
    for root, dirs, files in os.walk(path):
        dirs.sort()
        for name in sorted(files):
            count += 1
            if count > MAX_TREE_FILES:
                return "tree:large"
            full = Path(root) / name
            rel = full.relative_to(path).as_posix()
            kind = special_kind(full)
            digest = "link" if kind == "symlink" else kind if kind else file_sha256(full)
            h.update(f"{rel}\0{digest}\n".encode())
        for name in dirs:
            h.update(f"{(Path(root) / name).relative_to(path).as_posix()}/\n".encode())
    return "tree:" + h.hexdigest()


def _checked(ctx: ToolContext, path: str) -> Path:
    return check_write_path(ctx.workspace, path, allow=ctx.allow_autorun_paths)


def _check_paths(*keys: str) -> Any:
    def check(args: dict[str, Any], ctx: ToolContext) -> str | None:
        for key in keys:
            if key in args:
                try:
                    _checked(ctx, args[key])
                except ToolError as exc:
                    return str(exc)
        return None

    return check


# --- glob -------------------------------------------------------------------------------------


@os_errors_as_tool_errors
def _glob(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    pattern = args["pattern"].strip()
    pattern = pattern[2:] if pattern.startswith("./") else pattern
    base = confine(ctx.workspace, args.get("path", "."))
    if not base.is_dir():
        raise ToolError(f"{args.get('path', '.')!r} is not a directory of the workspace")
    root = ctx.workspace.resolve()
    hits: list[tuple[str, str]] = []
    outside = special = 0
    for dirpath, dirs, files in os.walk(base):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        here = Path(dirpath)
        for name in [*dirs, *files]:
            full = here / name
            if full.is_symlink() and not full.resolve().is_relative_to(root):
                outside += 1
                continue
            rel = full.relative_to(root).as_posix()
            if not path_matches(rel, pattern):
                continue
            if special_kind(full.resolve() if full.is_symlink() else full):  # lstat only: never opened
                special += 1
                continue
            size = "dir" if full.is_dir() else str(full.lstat().st_size)
            hits.append((rel + ("/" if full.is_dir() else ""), size))
    hits.sort()
    lines = [f"{size:>10}  {rel}" for rel, size in hits[:MAX_GLOB_ENTRIES]]
    if len(hits) > MAX_GLOB_ENTRIES:
        lines.append(f"[truncated: {len(hits)} matches, showing the first {MAX_GLOB_ENTRIES}; narrow the pattern]")
    if outside:
        lines.append(f"[skipped {outside} symlink(s) pointing outside the workspace]")
    if special:
        lines.append(f"[skipped {special} special file(s) (FIFO, socket, device): no tool reads them]")
    if not hits:
        lines.append(f"[no path matches {pattern!r}]")
    return ToolOutcome(text="\n".join(lines))


GLOB = Tool(
    name="glob",
    description=(
        "Find workspace paths by pattern: one match per line, sorted, as '<size in bytes or dir>  <path>' "
        "(directories end with '/'). Patterns are relative to the workspace: '*' and '?' match inside one "
        "path segment, '**' across segments ('src/**/*.py', '**/test_*.py'); the same globs scopes use. "
        ".git, __pycache__ and .venv are skipped."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "minLength": 1, "maxLength": 1000, "description": "glob, e.g. 'src/**/*.py'"},
            "path": path_prop("directory to search under (the pattern stays relative to the workspace)", "."),
        },
        "required": ["pattern"],
        "additionalProperties": False,
    },
    kind="read",
    run=_glob,
    check=path_check,
)


# --- move_path --------------------------------------------------------------------------------


def _move_paths(args: dict[str, Any]) -> list[str]:
    return [p for p in (args.get("path"), args.get("to")) if isinstance(p, str)]


@os_errors_as_tool_errors
def _move_path(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    source, dest = _checked(ctx, args["path"]), _checked(ctx, args["to"])
    if not os.path.lexists(source):
        raise ToolError(f"no such file or directory {args['path']!r} in the workspace; glob or list_dir shows what exists")
    if os.path.lexists(dest):
        raise ToolError(f"{args['to']!r} exists already; move_path never overwrites: delete it first or pick another name")
    if source.is_dir() and dest.is_relative_to(source):
        raise ToolError(f"cannot move {args['path']!r} into itself ({args['to']!r})")
    dest.parent.mkdir(parents=True, exist_ok=True)
    os.rename(source, dest)
    return ToolOutcome(
        text=f"moved {relative(ctx.workspace, source)} -> {relative(ctx.workspace, dest)}",
        external_id=tree_fingerprint(dest),
    )


def _move_fingerprint(args: dict[str, Any], ctx: ToolContext) -> str | None:
    _checked(ctx, args["to"])  # both paths hold to the rules at the intent too, not only at the gate
    return tree_fingerprint(_checked(ctx, args["path"]))


def _move_reconcile(args: dict[str, Any], ctx: ToolContext) -> ReconcileOutcome:
    try:
        source, dest = _checked(ctx, args["path"]), _checked(ctx, args["to"])
    except ToolError as exc:
        return ReconcileOutcome("undecidable", detail=f"cannot inspect the paths: {exc}")
    src_there, dst_there = os.path.lexists(source), os.path.lexists(dest)
    if src_there and not dst_there:
        return ReconcileOutcome("none", detail="the source is still there and the destination is not")
    if dst_there and not src_there:
        moved = tree_fingerprint(dest)
        if ctx.before in (None, MISSING) or ctx.before == moved:
            return ReconcileOutcome("confirmed", external_id=moved, detail="the destination holds what the source held")
        return ReconcileOutcome("undecidable", detail="the destination exists but differs from what the source held")
    return ReconcileOutcome("undecidable", detail=f"source {'and destination both exist' if src_there else 'and destination are both missing'}")


MOVE_PATH = Tool(
    name="move_path",
    description=(
        "Move or rename a file or directory of the workspace ('path' -> 'to'; parent folders of 'to' are "
        "created). Never overwrites: 'to' must not exist. Needs a human's approval, or a scope covering both "
        "paths. Update the imports that name a moved module with apply_patch."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "path": path_prop("the file or directory to move, relative to the workspace"),
            "to": path_prop("its new path, relative to the workspace"),
        },
        "required": ["path", "to"],
        "additionalProperties": False,
    },
    kind="effect",
    needs_approval=True,
    run=_move_path,
    check=_check_paths("path", "to"),
    reconcile=_move_reconcile,
    fingerprint=_move_fingerprint,
    allowed_next_actions=EDIT_ACTIONS,
    paths=_move_paths,
    commits=True,
)


# --- delete_path ------------------------------------------------------------------------------


def _trash(target: Path, action_id: str) -> Path:
    return target.parent / (TRASH_PREFIX + hashlib.sha256(f"{action_id}\0{target.name}".encode()).hexdigest()[:16])


@os_errors_as_tool_errors
def _delete_path(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    target = _checked(ctx, args["path"])
    rel = relative(ctx.workspace, target)
    if not os.path.lexists(target):
        raise ToolError(f"no such file or directory {args['path']!r} in the workspace")
    if target.is_dir() and not target.is_symlink():
        if not args.get("recursive") and any(target.iterdir()):
            raise ToolError(f"{args['path']!r} is a directory that is not empty; pass recursive=true to delete it all")
        trash = _trash(target, ctx.action_id)
        os.rename(target, trash)  # atomic: from here the path is gone
        shutil.rmtree(trash)
        return ToolOutcome(text=f"deleted directory {rel}", external_id="deleted:" + rel)
    target.unlink()
    return ToolOutcome(text=f"deleted {rel}", external_id="deleted:" + rel)


def _delete_reconcile(args: dict[str, Any], ctx: ToolContext) -> ReconcileOutcome:
    try:
        target = _checked(ctx, args["path"])
    except ToolError as exc:
        return ReconcileOutcome("undecidable", detail=f"cannot inspect the path: {exc}")
    trash = _trash(target, ctx.action_id)
    if os.path.lexists(trash):  # renamed aside, removal cut short: finish it
        shutil.rmtree(trash, ignore_errors=True)
    if not os.path.lexists(target):
        return ReconcileOutcome("confirmed", external_id="deleted:" + relative(ctx.workspace, target),
                                detail="the path is gone")
    if ctx.before is None or tree_fingerprint(target) == ctx.before:
        return ReconcileOutcome("none", detail="the path is still there, unchanged")
    return ReconcileOutcome("undecidable", detail="the path is there but changed since the intent was written")


DELETE_PATH = Tool(
    name="delete_path",
    description=(
        "Delete a file, or a directory (one with content only with recursive=true). Needs a human's approval "
        "or a scope covering the path."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "path": path_prop("file or directory relative to the workspace"),
            "recursive": {"type": "boolean", "description": "delete a directory with everything in it"},
        },
        "required": ["path"],
        "additionalProperties": False,
    },
    kind="effect",
    needs_approval=True,
    run=_delete_path,
    check=_check_paths("path"),
    reconcile=_delete_reconcile,
    fingerprint=lambda args, ctx: tree_fingerprint(_checked(ctx, args["path"])),
    allowed_next_actions=EDIT_ACTIONS,
    commits=True,
)


# --- make_dir ---------------------------------------------------------------------------------


@os_errors_as_tool_errors
def _make_dir(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    target = _checked(ctx, args["path"])
    rel = relative(ctx.workspace, target)
    if os.path.lexists(target):
        raise ToolError(f"{args['path']!r} exists already" + (" (a file)" if not target.is_dir() else ""))
    target.mkdir(parents=True)
    return ToolOutcome(text=f"created directory {rel}", external_id="dir:" + rel)


def _make_dir_reconcile(args: dict[str, Any], ctx: ToolContext) -> ReconcileOutcome:
    try:
        target = _checked(ctx, args["path"])
    except ToolError as exc:
        return ReconcileOutcome("undecidable", detail=f"cannot inspect the path: {exc}")
    if target.is_dir() and not target.is_symlink() and ctx.before in (None, MISSING):
        return ReconcileOutcome("confirmed", external_id="dir:" + relative(ctx.workspace, target),
                                detail="the directory exists")
    if not os.path.lexists(target):
        return ReconcileOutcome("none", detail="the directory does not exist")
    return ReconcileOutcome("undecidable", detail="the path existed before the intent; cannot tell")


MAKE_DIR = Tool(
    name="make_dir",
    description="Create a directory (and its missing parents) in the workspace. Needs a human's approval or a scope.",
    input_schema={
        "type": "object",
        "properties": {"path": path_prop("directory relative to the workspace")},
        "required": ["path"],
        "additionalProperties": False,
    },
    kind="effect",
    needs_approval=True,
    run=_make_dir,
    check=_check_paths("path"),
    reconcile=_make_dir_reconcile,
    fingerprint=lambda args, ctx: tree_fingerprint(_checked(ctx, args["path"])),
    allowed_next_actions=EDIT_ACTIONS,
    commits=True,
)

__all__ = ["DELETE_PATH", "GLOB", "MAKE_DIR", "MOVE_PATH", "tree_fingerprint"]
