"""Unified diffs for `apply_patch`: parse one (several files, several hunks each) and apply it.

Why longrun applies diffs itself rather than through `git apply` or `patch`: the gate must check
before the effect that the diff applies to the files as they are *now* (rule 7, evidence), the
reconcile after a crash must apply it backwards to tell "applied" from "not applied", and both
must work in a workspace that is not a git repository. Strict rules, no fuzz:
- each hunk's context and removed lines must match the file exactly, at the line the header
  names or (the file moved on a little) at the one place in the file where they occur;
- `--- /dev/null` creates a file that must not exist, `+++ /dev/null` deletes one whose whole text
  the hunk removes; renames and mode changes are refused (a move is `move_path`'s job);
- `\\ No newline at end of file` is honoured.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from longrun.errors import ToolError

MAX_DIFF_FILES = 200
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass(frozen=True)
class Hunk:
    old_start: int
    old: tuple[str, ...]
    """Context and removed lines, each with its line ending (none on a last line without one)."""
    new: tuple[str, ...]

    def inverted(self) -> Hunk:
        return Hunk(self.old_start, self.new, self.old)


@dataclass(frozen=True)
class FilePatch:
    old_path: str | None
    """None: the file is created (`--- /dev/null`)."""
    new_path: str | None
    """None: the file is deleted (`+++ /dev/null`)."""
    hunks: tuple[Hunk, ...] = field(default_factory=tuple)

    @property
    def path(self) -> str:
        path = self.new_path or self.old_path
        assert path is not None
        return path

    def inverted(self) -> FilePatch:
        return FilePatch(self.new_path, self.old_path, tuple(h.inverted() for h in self.hunks))


def _header_path(line: str, marker: str) -> str | None:
    raw = line[len(marker):].split("\t", 1)[0].strip()
    if raw == "/dev/null":
        return None
    if raw.startswith('"'):
        raise ToolError(f"quoted path {raw!r} in the diff is not supported; give plain paths")
    return raw[2:] if raw[:2] in ("a/", "b/") else raw


def parse(text: str) -> list[FilePatch]:
    """The files of a unified diff, in order.

    Raises:
        ToolError: the text is not a unified diff this tool applies; the message says where.
    """
    lines = text.splitlines(keepends=True)
    files: list[FilePatch] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith(("rename from", "rename to", "copy from", "old mode", "new mode", "similarity index")):
            raise ToolError(f"line {i + 1} of the diff ({line.strip()!r}): renames and mode changes are not applied; "
                            "use move_path to move a file, then a diff for its text")
        if line.startswith("GIT binary patch") or line.startswith("Binary files"):
            raise ToolError(f"line {i + 1} of the diff is a binary patch; apply_patch edits text files only")
        if not line.startswith("--- "):
            i += 1
            continue
        if i + 1 >= len(lines) or not lines[i + 1].startswith("+++ "):
            raise ToolError(f"line {i + 1} of the diff starts a file ('--- ') without its '+++ ' line")
        old_path, new_path = _header_path(line.rstrip("\r\n"), "--- "), _header_path(lines[i + 1].rstrip("\r\n"), "+++ ")
        if old_path is None and new_path is None:
            raise ToolError(f"line {i + 1} of the diff: both sides are /dev/null")
        if old_path is not None and new_path is not None and old_path != new_path:
            raise ToolError(f"line {i + 1} of the diff renames {old_path!r} to {new_path!r}; use move_path for that")
        i += 2
        hunks: list[Hunk] = []
        while i < len(lines) and lines[i].startswith("@@"):
            m = _HUNK.match(lines[i])
            if m is None:
                raise ToolError(f"line {i + 1} of the diff is not a hunk header (@@ -l,n +l,n @@): {lines[i].strip()!r}")
            old_n = int(m.group(2)) if m.group(2) is not None else 1
            new_n = int(m.group(4)) if m.group(4) is not None else 1
            i += 1
            old: list[str] = []
            new: list[str] = []
            prev = " "
            while i < len(lines) and (len(old) < old_n or len(new) < new_n or lines[i].startswith("\\")):
                body = lines[i]
                tag, rest = body[:1], body[1:]
                if tag == "\\":  # no newline at the end of the previous line
                    for side in ([old] if prev == "-" else [new] if prev == "+" else [old, new]):
                        if side:
                            side[-1] = side[-1].rstrip("\r\n")
                    i += 1
                    continue
                if body in ("\n", "\r\n"):  # an empty context line whose leading space got lost
                    tag, rest = " ", body
                if tag not in (" ", "-", "+"):
                    raise ToolError(f"line {i + 1} of the diff: the hunk has fewer lines than its header says")
                if tag in (" ", "-"):
                    old.append(rest)
                if tag in (" ", "+"):
                    new.append(rest)
                prev = tag
                i += 1
            if len(old) != old_n or len(new) != new_n:
                raise ToolError(f"a hunk of {new_path or old_path!r} has {len(old)}/{len(new)} lines, its header says "
                                f"{old_n}/{new_n}")
            hunks.append(Hunk(int(m.group(1)), tuple(old), tuple(new)))
        if not hunks:
            raise ToolError(f"the diff of {new_path or old_path!r} has no hunk")
        files.append(FilePatch(old_path, new_path, tuple(hunks)))
        if len(files) > MAX_DIFF_FILES:
            raise ToolError(f"the diff changes more than {MAX_DIFF_FILES} files; split it")
    if not files:
        raise ToolError("no file in the diff: it needs '--- a/PATH', '+++ b/PATH' and '@@' hunks")
    seen = [f.path for f in files]
    if len(set(seen)) != len(seen):
        raise ToolError("the diff names a file twice; give each file's hunks under one header")
    return files


def _find(lines: list[str], block: tuple[str, ...], hint: int, lo: int) -> int:
    """Where `block` starts in `lines` (at or after `lo`): at `hint` when it matches there,
    else at its one occurrence; -1 when it is absent, -2 when it occurs more than once."""
    n = len(block)

    def at(k: int) -> bool:
        return tuple(lines[k:k + n]) == block

    if lo <= hint <= len(lines) - n and at(hint):
        return hint
    found = [k for k in range(lo, len(lines) - n + 1) if at(k)]
    if len(found) == 1:
        return found[0]
    return -1 if not found else -2


def apply_file(text: str | None, patch: FilePatch) -> str | None:
    """The file's text after `patch` (None: the file is deleted).

    Args:
        text: the file's text now, None when it does not exist.

    Raises:
        ToolError: the patch does not apply to this text; the message names the hunk.
    """
    path = patch.path
    if patch.old_path is None:
        if text is not None:
            raise ToolError(f"the diff creates {path!r}, which exists already; diff against its text instead")
        if any(h.old for h in patch.hunks):
            raise ToolError(f"the diff creates {path!r} but a hunk has context or removed lines")
        return "".join(line for h in patch.hunks for line in h.new)
    if text is None:
        raise ToolError(f"no such file {path!r} in the workspace; the diff edits it")
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    pos = 0
    for number, hunk in enumerate(patch.hunks, 1):
        start = _find(lines, hunk.old, hunk.old_start - 1 if hunk.old else hunk.old_start, pos)
        if start < 0:
            how = "does not match the file" if start == -1 else "matches more than one place"
            raise ToolError(f"hunk {number} of {path!r} (at line {hunk.old_start}) {how} now; read the file again "
                            "and make the diff against what it holds")
        out += lines[pos:start] + list(hunk.new)
        pos = start + len(hunk.old)
    out += lines[pos:]
    result = "".join(out)
    if patch.new_path is None:
        if result:
            raise ToolError(f"the diff deletes {path!r} but leaves text in it; its hunk must remove every line")
        return None
    return result


__all__ = ["MAX_DIFF_FILES", "FilePatch", "Hunk", "apply_file", "parse"]
