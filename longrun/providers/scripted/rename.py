"""What the refactor policy knows and computes: the rename asked for, its notes, each file's patch.

Pure helpers for `refactor.RefactorPolicy`, kept apart so the policy module holds only the
decisions.

- `Rename.parse` recognises the objective: "Rename `old` to `new` ..." (also "replace `old`
  with `new`"), two identifiers in backticks. Anything else is not a rename and the provider
  keeps the forensic policy, so an objective has to ask for a rename in so many words.
- `Move.parse` recognises a module move in the same objective ("move the module `pkg.a` to
  `pkg.sub.b`"): `glob` finds its file, `move_path` moves it, and the file patches rewrite the old
  dotted name (`\\bpkg\\.a\\b`) once the move is done, never before.
- A rename matches the old name as a whole word (`\\bold\\b`), as a person's "find whole word"
  would: `calc_total_weight` is another name and keeps it.
- `RenameKnowledge` is the policy's memory, parsed back from its own notes (one fact per note, one
  line each, so a note the summary's fact ledger flattened still reads the same):
  `rename survey:` (the files naming the old name, with counts), `rename done:` / `rename failed:` /
  `rename skipped:` (one per file, a done one with its commit in a git change set), `rename
  check:` (the second grep), `verify:` (the tests), `tool error:` (a call that is never repeated),
  `move survey:` / `move done:` / `move failed:` (the module move), `change set: branch` (once).
- `plan_patch` turns a fresh `read_file` output into one `apply_patch` per file. apply_patch
  replaces text that occurs exactly once, and a name used three times in a file occurs three
  times, so the patch replaces the smallest *span of whole lines* holding every occurrence: from
  the first line naming it to the last, grown by a line each side until the span is unique in the
  file. That keeps the approval's preview (and a scope's audited use) as small as the change, with
  no write_file of a whole file that a human would have to diff by eye.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from longrun.providers.scripted.rules import parse_numbered

_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_RENAME_RE = re.compile(
    rf"\b(?:rename|replace)\s+`(?P<old>{_IDENT})`\s+(?:to|with|by|as|->)\s+`(?P<new>{_IDENT})`", re.I
)
_MODULE = rf"{_IDENT}(?:\.{_IDENT})+"
_MOVE_RE = re.compile(rf"\bmove\s+(?:the\s+module\s+)?`(?P<old>{_MODULE})`\s+to\s+`(?P<new>{_MODULE})`", re.I)
_COMMIT_RE = re.compile(r"\[change set: committed ([0-9a-f]{7,40}) on branch (\S+)\]")
PARTIAL_MARKERS = ("[line truncated]", "[truncated at", "[invalid UTF-8", "[binary file")
"""What `read_file` adds when it did not show the file whole and exact: no patch is built from it."""
MAX_LISTED_FILES = 60
"""Files one survey note lists; more are left to the check's grep, which reports them."""


@dataclass(frozen=True)
class Move:
    """A module to move ("move the module `pkg.a` to `pkg.sub.b`"): `move_path` moves its file, and
    every import naming the old dotted name is rewritten with the rename's patch of that file."""

    old: str
    new: str

    @classmethod
    def parse(cls, objective: str) -> Move | None:
        m = _MOVE_RE.search(objective)
        if m is None or m.group("old") == m.group("new"):
            return None
        return cls(m.group("old"), m.group("new"))

    @property
    def word(self) -> re.Pattern[str]:
        return re.compile(rf"\b{re.escape(self.old)}\b")

    @property
    def old_file(self) -> str:
        return self.old.replace(".", "/") + ".py"

    @property
    def glob(self) -> str:
        """The `glob` pattern that finds the module's file wherever the package root is."""
        return "**/" + self.old_file

    def destination(self, source: str) -> str | None:
        """Where the module's file goes, from where it is (`src/pkg/a.py` -> `src/pkg/sub/b.py`)."""
        if not (source == self.old_file or source.endswith("/" + self.old_file)):
            return None
        return source[: len(source) - len(self.old_file)] + self.new.replace(".", "/") + ".py"


@dataclass(frozen=True)
class Rename:
    old: str
    new: str
    move: Move | None = None

    @classmethod
    def parse(cls, objective: str) -> Rename | None:
        """The rename an objective asks for, or None (then it is not a refactor objective)."""
        m = _RENAME_RE.search(objective)
        if m is None or m.group("old") == m.group("new"):
            return None
        return cls(m.group("old"), m.group("new"), Move.parse(objective))

    @property
    def word(self) -> re.Pattern[str]:
        return re.compile(rf"\b{re.escape(self.old)}\b")

    @property
    def grep_pattern(self) -> str:
        """The `grep` tool's pattern for the old name as a whole word (a Python regex), and for the
        module to move when there is one."""
        own = rf"\b{re.escape(self.old)}\b"
        return own if self.move is None else own + rf"|\b{re.escape(self.move.old)}\b"

    def substitutions(self, module_moved: bool) -> list[tuple[re.Pattern[str], str]]:
        subs = [(self.word, self.new)]
        if module_moved and self.move is not None:
            subs.append((self.move.word, self.move.new))
        return subs


def committed(text: str) -> tuple[str, str] | None:
    """(commit, branch) from an effect's output in a git change set."""
    m = _COMMIT_RE.search(text)
    return (m.group(1), m.group(2)) if m else None


@dataclass(frozen=True)
class RenamePatch:
    path: str
    old: str
    new: str
    occurrences: int
    first_line: int


@dataclass(frozen=True)
class NoPatch:
    reason: str
    nothing_to_do: bool = False
    """True when the file no longer names the old name (a skip, not a failure)."""


def plan_patch(path: str, read_output: str, rename: Rename, *, module_moved: bool = False) -> RenamePatch | NoPatch:
    """The one apply_patch that renames every occurrence in a file, from its `read_file` output
    (and, once the module moved, rewrites the imports naming its old dotted name)."""
    if any(m in read_output for m in PARTIAL_MARKERS):
        return NoPatch("read_file did not show it whole (truncated or not clean UTF-8); not patched from a partial read")
    lines = parse_numbered(read_output)
    if not lines:
        return NoPatch(f"it read back empty; no `{rename.old}` in it", nothing_to_do=True)
    numbers = sorted(lines)
    subs = rename.substitutions(module_moved)
    hits = [n for n in numbers if any(w.search(lines[n]) for w, _ in subs)]
    if not hits:
        return NoPatch(f"no `{rename.old}` in it when read", nothing_to_do=True)
    whole = "\n".join(lines[n] for n in numbers)
    top, bottom = hits[0], hits[-1]
    while True:
        old = "\n".join(lines[n] for n in range(top, bottom + 1) if n in lines)
        if _once(whole, old):
            break
        if top == numbers[0] and bottom == numbers[-1]:
            return NoPatch("no span of the file occurs exactly once")
        top, bottom = max(numbers[0], top - 1), min(numbers[-1], bottom + 1)
    new = old
    for w, replacement in subs:
        new = w.sub(replacement, new)
    return RenamePatch(path, old, new, sum(len(w.findall(old)) for w, _ in subs), top)


def _once(text: str, sub: str) -> bool:
    """`sub` occurs exactly once in `text`, overlapping occurrences included (apply_patch's rule)."""
    first = text.find(sub)
    return first != -1 and text.find(sub, first + 1) == -1


def grep_counts(output: str) -> dict[str, int]:
    """Matching lines per file of a `grep` output (`relpath:lineno:line`), in path order."""
    counts: dict[str, int] = {}
    for line in output.splitlines():
        m = re.match(r"^(.+?):(\d+):", line)
        if m:
            counts[m.group(1)] = counts.get(m.group(1), 0) + 1
    return dict(sorted(counts.items()))


def listing(counts: dict[str, int]) -> str:
    return ", ".join(f"{p} ({n})" for p, n in counts.items())


_SURVEY_RE = re.compile(r"^rename survey: `[^`]*` in (\d+) file\(s\)[^:]*: (.*)$")
_FILE_RE = re.compile(r"^rename (done|failed|skipped): (.*)$")
_COUNT_RE = re.compile(r"^(.+) \((\d+)\)$")
_MOVE_NOTE_RE = re.compile(r"^move (survey|done|failed): (.+?) -> (.+?)(?=$|, commit |: )(.*)$")
_COMMIT_NOTE_RE = re.compile(r"\bcommit ([0-9a-f]{7,40})\b")


@dataclass
class RenameKnowledge:
    """The refactor policy's record, rebuilt from its notes on every request."""

    found: dict[str, int] | None = None
    """Files naming the old name (matching lines), once the survey has run; {} when none does."""
    survey_problem: str = ""
    done: dict[str, str] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    check: str | None = None
    verify: str | None = None
    errors: list[str] = field(default_factory=list)
    move_planned: tuple[str, str] | None = None
    """(source file, destination file) of the module to move, once the survey found it."""
    move_problem: str | None = None
    """Why the module is not moved: not found by the survey, or the move failed (its note)."""
    moved: bool = False
    branch: str | None = None
    commits: list[tuple[str, str]] = field(default_factory=list)
    """(commit, what) of each edit in the run's git change set, in order."""

    def learn(self, note: str) -> None:
        line = " ".join(note.split())
        if m := _MOVE_NOTE_RE.match(line):
            kind, src, dst, rest = m.group(1), m.group(2), m.group(3), m.group(4) or ""
            if kind == "survey":
                self.move_planned = (src, dst)
            elif kind == "done":
                self.move_planned, self.moved = (src, dst), True
                if c := _COMMIT_NOTE_RE.search(rest):
                    self.commits.append((c.group(1), f"move {src} -> {dst}"))
            else:
                self.move_problem = rest.removeprefix(": ") or "failed"
            return
        if line.startswith("move survey: none: "):
            self.move_problem = line[len("move survey: none: "):]
            return
        if line.startswith("change set: branch "):
            self.branch = line[len("change set: branch "):]
            return
        if m := _SURVEY_RE.match(line):
            self.found = {}
            for part in m.group(2).split(", "):
                if c := _COUNT_RE.match(part.strip()):
                    self.found[c.group(1)] = int(c.group(2))
        elif line.startswith("rename survey: "):
            self.found = {}
            self.survey_problem = line[len("rename survey: "):]
        elif m := _FILE_RE.match(line):
            path, outcome = self._split_path(m.group(2))
            {"done": self.done, "failed": self.failed, "skipped": self.skipped}[m.group(1)][path] = outcome
            if m.group(1) == "done" and (c := _COMMIT_NOTE_RE.search(outcome)):
                self.commits.append((c.group(1), path))
        elif line.startswith("rename check: "):
            self.check = line[len("rename check: "):]
        elif line.startswith("verify: "):
            self.verify = line[len("verify: "):]
        elif line.startswith("tool error: "):
            self.errors.append(line)

    def where(self, path: str) -> str:
        """Where a file the survey found is now: the moved module's destination once it moved."""
        if self.moved and self.move_planned is not None and path == self.move_planned[0]:
            return self.move_planned[1]
        return path

    def _split_path(self, rest: str) -> tuple[str, str]:
        """`<path>: <outcome>`, the path being one the survey found (a path may hold ': ')."""
        known = [p for p in [*(self.found or {}), *(self.move_planned or ())] if rest.startswith(p + ": ")]
        if known:
            path = max(known, key=len)
            return path, rest[len(path) + 2:]
        path, _, outcome = rest.partition(": ")
        return path, outcome

    def handled(self, path: str) -> bool:
        return any(p in self.done or p in self.failed or p in self.skipped for p in {path, self.where(path)})

    def todo(self) -> list[str]:
        return [p for p in (self.found or {}) if not self.handled(p)]

    @staticmethod
    def count_of(outcome: str) -> int:
        m = re.match(r"^(\d+) occurrence", outcome)
        return int(m.group(1)) if m else 0
