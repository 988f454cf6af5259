"""The scripted agent's rule library: suspicious Python patterns and the one-line fix for each.

Small and explainable on purpose: every finding names the rule that fired and the line it fired
on, and the fix is a textual rewrite of that line, so a human approving the edit can check it by
eye. It is a stand-in for a model's judgement, not a linter.

Both policies run it: the parent on the files it reads itself, a child on the files of its brief.
The parent also reads its children's answers back against it (`RULE_IDS`): a finding it can act
on names one of these rules.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

LINE_RE = re.compile(r"^\s*(\d+)\t(.*)$")


@dataclass(frozen=True)
class Rule:
    """`pattern` finds the suspect; `fix` rewrites the line (None: report only); `guard` (given the
    file's lines and the 1-based line number) returns False to silence a known-legitimate use."""

    id: str
    pattern: re.Pattern[str]
    explain: Callable[[re.Match[str]], str]
    fix: Callable[[re.Match[str], str], str] | None = None
    guard: Callable[[dict[int, str], int], bool] | None = None


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    rule: str
    description: str
    text: str


def _replace(m: re.Match[str], line: str, new: str) -> str:
    return line[: m.start()] + new + line[m.end() :]


def _no_lookahead_index(lines: dict[int, str], n: int) -> bool:
    """`range(len(x) - 1)` is right for pairwise loops that read `x[i + 1]`."""
    window = " ".join(lines.get(i, "") for i in range(n, n + 5))
    return not re.search(r"\+\s*1\s*\]", window)


def _is_condition(lines: dict[int, str], n: int) -> bool:
    return lines.get(n, "").lstrip().startswith(("while ", "if ", "elif "))


RULES: tuple[Rule, ...] = (
    Rule(
        id="off-by-one-slice-end",
        pattern=re.compile(r"\[([^\[\]:]*):([^\[\]:]*?[\w)\]])\s*-\s*1\s*\]"),
        explain=lambda m: f"slice end `{m.group(2).strip()} - 1` drops the last element (slice ends are already exclusive)",
        fix=lambda m, line: _replace(m, line, f"[{m.group(1)}:{m.group(2)}]"),
    ),
    Rule(
        id="off-by-one-range",
        pattern=re.compile(r"range\(\s*len\(([^()]+)\)\s*-\s*1\s*\)"),
        explain=lambda m: f"`range(len({m.group(1)}) - 1)` never visits the last element of {m.group(1)}",
        fix=lambda m, line: _replace(m, line, f"range(len({m.group(1)}))"),
        guard=_no_lookahead_index,
    ),
    Rule(
        id="inclusive-length-bound",
        pattern=re.compile(r"(\w+)\s*<=\s*len\(([^()]+)\)"),
        explain=lambda m: f"`{m.group(1)} <= len({m.group(2)})` goes one index past the end",
        fix=lambda m, line: _replace(m, line, f"{m.group(1)} < len({m.group(2)})"),
        guard=_is_condition,
    ),
    Rule(
        id="floor-division-mean",
        pattern=re.compile(r"(sum\([^()]*\))\s*//\s*(len\()"),
        explain=lambda m: "a mean computed with `//` is truncated to an integer",
        fix=lambda m, line: _replace(m, line, f"{m.group(1)} / {m.group(2)}"),
    ),
    Rule(
        id="identity-comparison-literal",
        pattern=re.compile(r"\bis\s+(not\s+)?(-?\d+(?:\.\d+)?|'[^']*'|\"[^\"]*\")"),
        explain=lambda m: f"`is {m.group(1) or ''}{m.group(2)}` compares identity, not value",
        fix=lambda m, line: _replace(m, line, f"{'!=' if m.group(1) else '=='} {m.group(2)}"),
    ),
)

RULES_BY_ID = {r.id: r for r in RULES}
RULE_IDS: tuple[str, ...] = tuple(RULES_BY_ID)  # in library order: what a parent can act on in an answer


def rule_catalogue() -> str:
    """The rule library in one sentence, for briefs."""
    return "; ".join(f"{r.id}" for r in RULES)


def parse_numbered(text: str) -> dict[int, str]:
    """Lines of a `read_file` output (`{lineno:>6}\\t{text}` per line) by line number."""
    out: dict[int, str] = {}
    for raw in text.splitlines():
        m = LINE_RE.match(raw)
        if m:
            out[int(m.group(1))] = m.group(2)
    return out


def scan(path: str, lines: dict[int, str]) -> list[Finding]:
    """Every rule that fires on a Python file, in line order."""
    if not path.endswith(".py"):
        return []
    found: list[Finding] = []
    for n in sorted(lines):
        code = lines[n]
        if code.lstrip().startswith("#"):
            continue
        for rule in RULES:
            m = rule.pattern.search(code)
            if m and (rule.guard is None or rule.guard(lines, n)):
                found.append(Finding(path=path, line=n, rule=rule.id, description=rule.explain(m), text=code.strip()))
    return found


@dataclass(frozen=True)
class Patch:
    path: str
    line: int
    old: str
    new: str


def propose_patch(finding: Finding, lines: dict[int, str]) -> Patch | None:
    """The `apply_patch` arguments that fix `finding` in the current content of its file, or None
    when the rule has no fix or no longer fires. `old` is grown with following lines until it
    occurs exactly once in the file."""
    rule = RULES_BY_ID.get(finding.rule)
    if rule is None or rule.fix is None:
        return None
    order = sorted(lines)
    candidates = ([finding.line] if finding.line in lines else []) + [n for n in order if n != finding.line]
    for n in candidates:
        m = rule.pattern.search(lines[n])
        if not m or (rule.guard is not None and not rule.guard(lines, n)):
            continue
        new_line = rule.fix(m, lines[n])
        text = "\n".join(lines[i] for i in order)
        following = [i for i in order if i >= n]
        for k in range(1, len(following) + 1):
            old = "\n".join(lines[i] for i in following[:k])
            if text.count(old) == 1:
                new = "\n".join([new_line] + [lines[i] for i in following[1:k]])
                return Patch(path=finding.path, line=n, old=old, new=new)
        return None
    return None
