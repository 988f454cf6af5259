"""What the scripted agent reads from the objective and the constraints of its run.

- The objective's distinctive words (`objective_terms`) drive the survey's search.
- A constraint such as "do not modify tests/" or "read-only" is respected (`Constraints`): the fix
  stage skips a forbidden edit and its note says which constraint forbade it; "do not run ..."
  keeps the verify stage from running commands.

**How it finds the test command.** The allowed commands are not in the state block, so the agent
only ever runs an argv it was *told*: a constraint (or a line of the objective) of the form
`tests: <argv...>` (also `test command: <argv...>`), split like a shell would (shlex), without a
shell (`find_test_command`). The run's allow-list still decides; a refusal is noted and the review
moves on. No hint, no command: the verify stage notes that and continues.
"""

from __future__ import annotations

import fnmatch
import re
import shlex
from dataclasses import dataclass

_STOPWORDS = frozenset(
    ["about", "above", "after", "again", "against", "also", "another", "anything", "around", "because", "been", "before", "being", "below", "between", "both", "bug", "bugs", "cause", "caused", "check", "code", "could", "defect", "defects", "does", "doing", "done", "during", "each", "else", "error", "errors", "every", "expected", "file", "files", "find", "finding", "fix", "fixed", "fixes", "from", "have", "having", "into", "issue", "issues", "just", "look", "looks", "make", "more", "most", "much", "must", "need", "only", "other", "over", "please", "project", "propose", "proposed", "report", "repository", "return", "returns", "review", "should", "some", "still", "such", "than", "that", "their", "them", "then", "there", "these", "they", "this", "those", "through", "under", "until", "very", "wait", "what", "when", "where", "which", "while", "with", "without", "workspace", "would", "wrong", "test", "tests"]
)

_TEST_HINT_RE = re.compile(r"^\s*(?:test command|tests?)\s*:\s*(.+?)\s*$", re.I | re.M)
_FORBID_RE = re.compile(
    r"\b(?:do not|don't|dont|never|must not|may not|cannot|can't|no)\s+"
    r"(?:modify|modifying|edit|editing|change|changing|touch|touching|patch|patching|alter|write(?:\s+to)?|"
    r"edits?\s+to|changes?\s+to|modifications?\s+to)\s+(?P<obj>.+)",
    re.I,
)
_READ_ONLY_RE = re.compile(r"\bread[- ]only\b", re.I)
_NO_COMMANDS_RE = re.compile(r"\b(?:do not|don't|dont|never|must not|no)\s+(?:run|execute|running)\b", re.I)
_GLOBAL_OBJECTS = ("any file", "anything", "the code", "code", "files", "the workspace", "the repository", "source")


@dataclass(frozen=True)
class Constraints:
    """What the visible constraints forbid, as the agent understands them."""

    texts: tuple[str, ...]
    forbidden_paths: tuple[tuple[str, str], ...]  # (pattern, constraint text)
    no_edits: str | None
    no_commands: str | None

    @classmethod
    def parse(cls, constraints: list[str]) -> Constraints:
        forbidden: list[tuple[str, str]] = []
        no_edits = no_commands = None
        for c in constraints:
            if _READ_ONLY_RE.search(c):
                no_edits = no_edits or c
            if _NO_COMMANDS_RE.search(c):
                no_commands = no_commands or c
            for m in _FORBID_RE.finditer(c):
                obj = m.group("obj")
                paths = [t.rstrip(".,;:)'\"`") for t in re.findall(r"[\w.\-/*]+", obj)]
                paths = [p for p in paths if p and ("/" in p or "." in p.strip(".") or "*" in p)]
                if paths:
                    forbidden.extend((p, c) for p in paths)
                elif any(g in obj.lower() for g in _GLOBAL_OBJECTS):
                    no_edits = no_edits or c
        return cls(tuple(constraints), tuple(forbidden), no_edits, no_commands)

    def forbids_edit(self, path: str) -> str | None:
        """The constraint that forbids editing `path`, if any."""
        if self.no_edits:
            return self.no_edits
        norm = path.lstrip("./")
        for pattern, text in self.forbidden_paths:
            p = pattern.lstrip("./").rstrip("/")
            if not p:
                continue
            if (
                norm == p
                or norm.startswith(p + "/")
                or fnmatch.fnmatch(norm, pattern.lstrip("./"))
                or ("/" not in p and norm.rsplit("/", 1)[-1] == p)
            ):
                return text
        return None


def find_test_command(objective: str, constraints: list[str]) -> list[str] | None:
    """The argv given as `tests: <argv...>` in a constraint (first) or in the objective."""
    for text in [*constraints, objective]:
        m = _TEST_HINT_RE.search(text)
        if m:
            raw = m.group(1).strip().strip("`").strip()
            try:
                argv = shlex.split(raw)
            except ValueError:
                continue
            if argv:
                return argv
    return None


def objective_terms(objective: str, limit: int = 6) -> list[str]:
    """Distinctive words of the objective (stopwords out, plural `s` cut), in order."""
    text = _TEST_HINT_RE.sub(" ", objective)
    terms: list[str] = []
    for word in re.findall(r"[A-Za-z_][A-Za-z0-9_]{3,}", text):
        w = word.lower()
        if w in _STOPWORDS:
            continue
        if w.endswith("s") and not w.endswith("ss") and len(w) > 4:
            w = w[:-1]
        if w not in terms:
            terms.append(w)
    return terms[:limit]
