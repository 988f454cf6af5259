"""`apply_patch`: one coherent change, one approval, in one of three shapes.

- `{path, old, new}`: replace the one occurrence of `old` (the original shape);
- `{path, edits: [{old, new}, ...]}`: several hunks in one file, each `old` occurring exactly once
  in the file as it is and no two overlapping, applied together;
- `{diff}`: a unified diff, several files and hunks (`udiff`: strict, no fuzz; it may create or
  delete a file, never rename one: that is `move_path`).

All or nothing at the check: the gate (rule 7, evidence) applies the whole call to the files as
they are now, in memory, and refuses it if any part does not apply. Each file is then written
atomically; a crash between two files of a diff leaves some written, which reconcile sees
(`undecidable`: a human checks) unless the run's git change set settles it.

Reconcile with the pre-patch fingerprint (a file's `sha256:`, or for a diff `files:` over every
file's) is exact: the files unchanged -> none; the call undone backwards gives the fingerprinted
bytes -> confirmed. Without it, the text rules of each shape decide or say undecidable.
"""

from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from longrun.errors import ToolError
from longrun.tools import udiff
from longrun.tools.base import ReconcileOutcome, Tool, ToolContext, ToolOutcome
from longrun.tools.files import (
    EDIT_ACTIONS,
    MAX_PATCH_FILE_BYTES,
    MAX_WRITE_CHARS,
    MISSING,
    atomic_write,
    content_fingerprint,
    count_occurrences,
    os_errors_as_tool_errors,
    path_prop,
    read_text_for_patch,
)
from longrun.tools.paths import check_write_path, relative

MAX_EDITS = 100


@dataclass(frozen=True)
class FileChange:
    path: str
    target: Path
    before: str | None
    """The file's text now (None: it does not exist)."""
    after: str | None
    """Its text after the call (None: the call deletes it)."""


def form(args: dict[str, Any]) -> str:
    """`diff`, `edits` or `replace`; a call mixing them, or with none, is refused."""
    shapes = [k for k in ("diff", "edits", "old") if k in args]
    if len(shapes) != 1:
        raise ToolError("give exactly one of: 'old' and 'new' (one replacement), 'edits' (several in one file), "
                        "or 'diff' (a unified diff)")
    if shapes[0] == "diff":
        if "path" in args or "new" in args:
            raise ToolError("a 'diff' call names its files in the diff's headers; drop 'path', 'old' and 'new'")
        return "diff"
    if not isinstance(args.get("path"), str):
        raise ToolError(f"'path' is required with {'edits' if shapes[0] == 'edits' else 'old and new'}")
    if shapes[0] == "edits":
        if "new" in args:
            raise ToolError("'new' goes inside each edit; drop the top-level 'new'")
        return "edits"
    if "new" not in args:
        raise ToolError("'new' is required with 'old'")
    return "replace"


def _edits(args: dict[str, Any]) -> list[tuple[str, str]]:
    if form(args) == "replace":
        return [(args["old"], args["new"])]
    return [(e["old"], e["new"]) for e in args["edits"]]


def changed_paths(args: dict[str, Any]) -> list[str]:
    """The files a call changes: its `path`, or each file its diff names."""
    try:
        shape = form(args)
        if shape == "diff":
            return [f.path for f in udiff.parse(str(args["diff"]))]
    except ToolError:
        return [args["path"]] if isinstance(args.get("path"), str) else []
    return [args["path"]]


def _read_optional(target: Path, path: str) -> str | None:
    return read_text_for_patch(target, path) if target.exists() else None


def replace_all(text: str, edits: list[tuple[str, str]], path: str) -> str:
    """Every edit applied at once: each `old` exactly once in `text`, no two overlapping."""
    spans = []
    for number, (old, new) in enumerate(edits, 1):
        if old == new:
            raise ToolError(f"edit {number}: 'old' and 'new' are identical; there is nothing to change")
        n = count_occurrences(text, old)
        if n != 1:
            what = "was not found" if n == 0 else f"occurs {n} times"
            hint = "read the file and copy the text exactly" if n == 0 else "include more context so it occurs once"
            label = "the 'old' text" if len(edits) == 1 else f"the 'old' text of edit {number}"
            raise ToolError(f"{label} {what} in {path!r}; {hint}")
        start = text.index(old)
        spans.append((start, start + len(old), new))
    spans.sort()
    for (_, end, _), (start, _, _) in itertools.pairwise(spans):
        if start < end:
            raise ToolError(f"two edits of {path!r} overlap; merge them into one")
    out, pos = [], 0
    for start, end, new in spans:
        out += [text[pos:start], new]
        pos = end
    return "".join(out) + text[pos:]


def plan(args: dict[str, Any], ctx: ToolContext) -> list[FileChange]:
    """What the call would do to the files as they are now, computed in memory.

    Raises:
        ToolError: a path is refused, or the call does not apply; the message says why.
    """
    if form(args) != "diff":
        path = args["path"]
        target = check_write_path(ctx.workspace, path, allow=ctx.allow_autorun_paths)
        text = read_text_for_patch(target, path)
        return [FileChange(path, target, text, replace_all(text, _edits(args), path))]
    changes = []
    for fp in udiff.parse(str(args["diff"])):
        target = check_write_path(ctx.workspace, fp.path, allow=ctx.allow_autorun_paths)
        if target.is_dir():
            raise ToolError(f"{fp.path!r} is a directory; a diff edits files")
        before = _read_optional(target, fp.path)
        changes.append(FileChange(fp.path, target, before, udiff.apply_file(before, fp)))
    return changes


def _patch_check(args: dict[str, Any], ctx: ToolContext) -> str | None:
    """Gate rule 7 (evidence): the whole call must apply to the files *now* (each `old` exactly
    once, each hunk where it says). What the model read earlier is not evidence."""
    try:
        if form(args) != "diff":
            path = args["path"]
            text = read_text_for_patch(check_write_path(ctx.workspace, path, allow=ctx.allow_autorun_paths), path)
            edits = _edits(args)
            for number, (old, _) in enumerate(edits, 1):
                n = count_occurrences(text, old)
                if n != 1:
                    which = "" if len(edits) == 1 else f" of edit {number}"
                    return (f"the text to replace{which} occurs {n} times in {path!r} now (exactly 1 needed); "
                            "read the file again")
        plan(args, ctx)
    except ToolError as exc:
        return str(exc)
    except OSError as exc:
        return f"cannot read the files to check the patch: {exc}"
    return None


@os_errors_as_tool_errors
def _apply_patch(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    changes = plan(args, ctx)
    lines = []
    digests = []
    for change in changes:
        rel = relative(ctx.workspace, change.target)
        if change.after is None:
            change.target.unlink()
            lines.append(f"deleted {rel}")
            digests.append(f"{rel}:deleted")
            continue
        data = change.after.encode("utf-8")
        atomic_write(change.target, data)
        digest = hashlib.sha256(data).hexdigest()
        digests.append(digest)
        verb = "created" if change.before is None else "patched"
        lines.append(f"{verb} {rel}: sha256 {digest}")
    if form(args) == "replace":
        old, new = args["old"], args["new"]
        rel = relative(ctx.workspace, changes[0].target)
        return ToolOutcome(
            text=f"patched {rel}: replaced 1 occurrence ({old.count(chr(10)) + 1} line(s) -> "
            f"{new.count(chr(10)) + 1} line(s)); sha256 {digests[0]}",
            external_id=digests[0],
        )
    head = (f"patched {lines[0].split(': ')[0].removeprefix('patched ')}: {len(args['edits'])} edit(s) applied"
            if form(args) == "edits" else f"applied the diff to {len(changes)} file(s)")
    external = digests[0] if len(digests) == 1 else hashlib.sha256("\n".join(digests).encode()).hexdigest()
    return ToolOutcome(text="\n".join([head, *lines]), external_id=external)


def _combined(prints: list[tuple[str, str]]) -> str:
    return "files:" + hashlib.sha256("\n".join(f"{p}\t{fp}" for p, fp in prints).encode()).hexdigest()


def _text_print(text: str | None) -> str:
    return MISSING if text is None else "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _patch_fingerprint(args: dict[str, Any], ctx: ToolContext) -> str | None:
    """The files' state before the call: one file's fingerprint, or `files:` over a diff's files."""
    if form(args) != "diff":
        return content_fingerprint(check_write_path(ctx.workspace, args["path"], allow=ctx.allow_autorun_paths))
    prints = []
    for path in changed_paths(args):
        prints.append((path, content_fingerprint(check_write_path(ctx.workspace, path, allow=ctx.allow_autorun_paths))))
    return _combined(prints)


def _reconcile_diff(args: dict[str, Any], ctx: ToolContext) -> ReconcileOutcome:
    try:
        patches = udiff.parse(str(args["diff"]))
        now: list[tuple[str, str | None]] = []
        for fp in patches:
            target = check_write_path(ctx.workspace, fp.path, allow=ctx.allow_autorun_paths)
            now.append((fp.path, _read_optional(target, fp.path)))
    except ToolError as exc:
        return ReconcileOutcome("undecidable", detail=f"cannot inspect the targets: {exc}")

    def all_apply(inverted: bool) -> list[str | None] | None:
        out = []
        for fp, (_, text) in zip(patches, now, strict=True):
            try:
                out.append(udiff.apply_file(text, fp.inverted() if inverted else fp))
            except ToolError:
                return None
        return out

    current = _combined([(p, _text_print(t)) for p, t in now])
    forward, backward = all_apply(False), all_apply(True)
    if ctx.before is not None:
        if ctx.before == current:
            return ReconcileOutcome("none", detail="the files are unchanged since the intent was written")
        if backward is not None and ctx.before == _combined([(p, _text_print(t)) for (p, _), t in zip(now, backward,
                                                                                                      strict=True)]):
            return ReconcileOutcome("confirmed", external_id=current.removeprefix("files:"),
                                    detail="undoing the diff gives the files as they were")
        return ReconcileOutcome("undecidable", detail="the files are neither as before nor the diff applied "
                                "(a crash between two files, or another change)")
    if forward is not None and backward is None:
        return ReconcileOutcome("none", detail="the diff still applies and cannot be undone: it was not applied")
    if backward is not None and forward is None:
        return ReconcileOutcome("confirmed", external_id=current.removeprefix("files:"),
                                detail="the diff applies backwards only: it was applied")
    return ReconcileOutcome("undecidable", detail="the diff applies both ways, or neither; no fingerprint was recorded")


def _reconcile_edits(args: dict[str, Any], ctx: ToolContext) -> ReconcileOutcome:
    path, edits = args["path"], _edits(args)
    try:
        target = check_write_path(ctx.workspace, path, allow=ctx.allow_autorun_paths)
        text = read_text_for_patch(target, path)
    except ToolError as exc:
        return ReconcileOutcome("undecidable", detail=f"cannot inspect the target: {exc}")
    current = hashlib.sha256(text.encode("utf-8")).hexdigest()
    undone: str | None
    try:
        undone = replace_all(text, [(n, o) for o, n in edits], path) if all(n for _, n in edits) else None
    except ToolError:
        undone = None
    if ctx.before is not None:
        if ctx.before == "sha256:" + current:
            return ReconcileOutcome("none", detail="the file is unchanged since the intent was written")
        if undone is not None and ctx.before == _text_print(undone):
            return ReconcileOutcome("confirmed", external_id=current, detail="undoing the edits gives the original")
    try:
        replace_all(text, edits, path)
        forward = True
    except ToolError:
        forward = False
    if undone is not None and not forward and not any(o in n for o, n in edits):
        return ReconcileOutcome("confirmed", external_id=current, detail="every new text is present once, no old one")
    if forward and undone is None and not any(n and n in o for o, n in edits):
        return ReconcileOutcome("none", detail="every old text is still present once; the edits were not applied")
    return ReconcileOutcome("undecidable", detail="cannot tell from the text which edits were applied")


def _reconcile_replace(args: dict[str, Any], ctx: ToolContext) -> ReconcileOutcome:
    """Decide from the file's text (and, when recorded, its pre-patch fingerprint).

    With a fingerprint: unchanged -> none; undoing the one `new` gives the fingerprinted bytes ->
    confirmed. Otherwise the text rule: `new` present and `old` absent -> confirmed; `old` present
    once and `new` absent -> none (when `new` is part of `old`, its presence proves nothing and is
    ignored); anything else, including `old` being part of `new`, is undecidable.
    """
    path, old, new = args["path"], args["old"], args["new"]
    try:
        target = check_write_path(ctx.workspace, path, allow=ctx.allow_autorun_paths)
        text = read_text_for_patch(target, path)
    except ToolError as exc:
        return ReconcileOutcome("undecidable", detail=f"cannot inspect the target: {exc}")
    data = text.encode("utf-8")
    current = hashlib.sha256(data).hexdigest()
    if ctx.before is not None:
        if ctx.before == "sha256:" + current:
            return ReconcileOutcome("none", detail="the file is unchanged since the intent was written")
        if count_occurrences(text, new) == 1:
            undone = text.replace(new, old, 1).encode("utf-8")
            if ctx.before == "sha256:" + hashlib.sha256(undone).hexdigest():
                return ReconcileOutcome("confirmed", external_id=current, detail="the file is the patched original")
    old_n = count_occurrences(text, old)
    new_present = bool(new) and new in text
    if old not in new:
        if new_present and old_n == 0:
            return ReconcileOutcome("confirmed", external_id=current, detail="the new text is present, the old gone")
        if not new and old_n == 0:
            return ReconcileOutcome("confirmed", external_id=current, detail="the deleted text is gone")
        if old_n == 1 and (not new_present or new in old):
            return ReconcileOutcome("none", detail="the old text is still present once; the patch was not applied")
    return ReconcileOutcome(
        "undecidable",
        detail=f"cannot tell from the text: old occurs {old_n} time(s), new {'is' if new_present else 'is not'} present",
    )

def _patch_reconcile(args: dict[str, Any], ctx: ToolContext) -> ReconcileOutcome:
    try:
        shape = form(args)
    except ToolError as exc:
        return ReconcileOutcome("undecidable", detail=str(exc))
    if shape == "diff":
        return _reconcile_diff(args, ctx)
    if shape == "edits":
        return _reconcile_edits(args, ctx)
    return _reconcile_replace(args, ctx)


APPLY_PATCH = Tool(
    name="apply_patch",
    description=(
        "Edit workspace files; needs a human's approval (one approval for one coherent change). Three shapes: "
        "(1) 'path', 'old', 'new': replace the one occurrence of 'old'; (2) 'path' and 'edits' "
        "[{old, new}, ...]: several replacements in one file, each 'old' occurring exactly once and none "
        "overlapping; (3) 'diff': a unified diff ('--- a/PATH', '+++ b/PATH', '@@' hunks) over one or more "
        "files, which may create (--- /dev/null) or delete (+++ /dev/null) a file but not rename one (use "
        "move_path). The whole call must apply to the files as they are now, or nothing is changed."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "path": path_prop("file relative to the workspace (shapes 1 and 2)"),
            "old": {"type": "string", "minLength": 1, "maxLength": MAX_WRITE_CHARS, "description": "exact text"},
            "new": {"type": "string", "maxLength": MAX_WRITE_CHARS, "description": "replacement text"},
            "edits": {
                "type": "array", "minItems": 1, "maxItems": MAX_EDITS,
                "description": "several replacements in the one file 'path'",
                "items": {
                    "type": "object",
                    "properties": {
                        "old": {"type": "string", "minLength": 1, "maxLength": MAX_WRITE_CHARS},
                        "new": {"type": "string", "maxLength": MAX_WRITE_CHARS},
                    },
                    "required": ["old", "new"],
                    "additionalProperties": False,
                },
            },
            "diff": {"type": "string", "minLength": 1, "maxLength": MAX_WRITE_CHARS,
                     "description": "a unified diff; paths relative to the workspace (a/ and b/ prefixes allowed)"},
        },
        "additionalProperties": False,
    },
    kind="effect",
    needs_approval=True,
    run=_apply_patch,
    check=_patch_check,
    reconcile=_patch_reconcile,
    fingerprint=_patch_fingerprint,
    allowed_next_actions=EDIT_ACTIONS,
    paths=changed_paths,
    commits=True,
)

__all__ = ["APPLY_PATCH", "MAX_PATCH_FILE_BYTES", "FileChange", "changed_paths", "form", "plan", "replace_all"]
