"""The subagent protocol: how a child run is briefed, and how its answer is held and read back.

One module, because both sides of the contract must agree byte for byte: the workflow's
activities (`longrun.activities.children`) write a child's objective and hold its answer to the
contract whatever model answered; the scripted agent (`longrun.providers.scripted`) recognises a
child by its objective, reads the files of its brief and parses its children's answers back.
Pure: no I/O, no Temporal, no provider.

A child's objective, as `child_objective` writes it:

    Subagent brief:
    <the parent's brief, verbatim>
    Files:
    - <each path of the `task` call>
    <blank line>
    <ANSWER_SHAPE>

The first line (`BRIEF_PREFIX`) is what makes a run a child for the scripted agent
(`is_child_objective`); `Files:` is present only when the call named paths (`brief_files` reads
them back). A brief that quotes the parent's objective does it on a line starting with
`PARENT_OBJECTIVE_LABEL`.

The answer: FINDINGS (one line each, with its source: `(source: <file>:<line>)` or
`(command: <argv>)`) and UNCERTAIN, at most `MAX_ANSWER_WORDS` (400) words. `shape_answer`
holds any answer to that when it is collected; `parse_answer` reads one back, tolerantly.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from longrun.models.state import MAX_TEXT

BRIEF_PREFIX = "Subagent brief:"
PARENT_OBJECTIVE_LABEL = "Objective of the parent run:"
FILES_LABEL = "Files:"
MAX_ANSWER_WORDS = 400
ANSWER_SHAPE = (
    f"Answer once, at the end, in this shape and nothing else (at most {MAX_ANSWER_WORDS} words; never paste file "
    "contents; never ask questions back):\n"
    "FINDINGS:\n- <one finding per line> (source: <file>:<line> or command: <argv>)\n"
    "UNCERTAIN:\n- <what you could not confirm, or none>"
)

_SOURCE_RE = re.compile(r"\((?:source|sources|command)s?:\s*([^()]*)\)\s*$", re.I)
_PATH_LINE_RE = re.compile(r"^\s*([^\s:,]+):(\d+)")
_RULE_RE = re.compile(r"\brule\s+`?([a-z0-9][a-z0-9-]*)`?", re.I)
_CLEAN_RE = re.compile(r"\bno rule fired\b|\bclean\b|\bnothing (?:found|fired)\b", re.I)


# ---------------------------------------------------------------------------------------------
# The brief
# ---------------------------------------------------------------------------------------------


def child_objective(brief: str, paths: list[str]) -> str:
    """A child run's objective for a `task` call: the prefix, the brief, its files, the answer
    shape. The brief is cut so that the shape always fits in a state text (`MAX_TEXT`)."""
    objective = f"{BRIEF_PREFIX}\n{brief.strip()}"
    if paths:
        objective += f"\n{FILES_LABEL}\n" + "\n".join(f"- {p}" for p in paths)
    return objective[: MAX_TEXT - len(ANSWER_SHAPE) - 2] + "\n\n" + ANSWER_SHAPE


def is_child_objective(objective: str) -> bool:
    """Whether a run is a subagent, from its objective alone (a model sees nothing else)."""
    return objective.lstrip().startswith(BRIEF_PREFIX)


def brief_files(objective: str) -> list[str]:
    """The `- <path>` lines under the last `Files:` line of a child's objective, in order."""
    lines = objective.splitlines()
    starts = [i for i, line in enumerate(lines) if line.strip() == FILES_LABEL]
    if not starts:
        return []
    files: list[str] = []
    for line in lines[starts[-1] + 1 :]:
        m = re.match(r"^\s*-\s+(\S.*?)\s*$", line)
        if not m:
            break
        path = m.group(1).strip("`")
        if path not in files:
            files.append(path)
    return files


# ---------------------------------------------------------------------------------------------
# The answer: held to the contract when collected, read back by a parent
# ---------------------------------------------------------------------------------------------


def shape_answer(text: str) -> str:
    """Hold a child's answer to the contract: the FINDINGS/UNCERTAIN shape, at most 400 words.

    Whatever the child's model wrote, the parent's context grows by this much and no more; an
    answer in another shape is kept (as UNCERTAIN) rather than dropped, so nothing is hidden."""
    text = text.strip()
    if "FINDINGS:" not in text:
        text = f"FINDINGS:\n- (none in the expected shape)\nUNCERTAIN:\n- the subagent answered otherwise: {text}"
    kept: list[str] = []
    words = 0
    for line in text.splitlines():
        n = len(line.split())
        if words + n > MAX_ANSWER_WORDS:
            cut = " ".join(line.split()[: max(0, MAX_ANSWER_WORDS - words)])
            kept.append(f"{cut} [cut at {MAX_ANSWER_WORDS} words]")
            break
        kept.append(line)
        words += n
    return "\n".join(kept)


@dataclass(frozen=True)
class AnswerFinding:
    """A finding line the reader can act on: a file, a line, one of its rules, what was said."""

    path: str
    line: int
    rule: str
    description: str


@dataclass
class ChildAnswer:
    """A child's answer as the parent reads it back."""

    findings: list[AnswerFinding] = field(default_factory=list)  # one of `rules`, a file and a line
    clean: list[str] = field(default_factory=list)  # files the child read where nothing fired
    other: list[str] = field(default_factory=list)  # finding lines in no form the parent can act on
    uncertain: list[str] = field(default_factory=list)
    shaped: bool = False  # had a FINDINGS: section


def parse_answer(text: str, rules: Iterable[str] = ()) -> ChildAnswer:
    """Read an answer in the FINDINGS / UNCERTAIN shape back, tolerantly (a model may write it).

    A FINDINGS line is a finding when it ends with `(source: <path>:<line>)` and names one of
    `rules` (as `rule <id>`, else anywhere; the first of `rules` it contains wins, so their order
    decides); a line that says nothing fired (`no rule fired`, `clean`, `nothing found`) names
    clean files in its source; anything else is kept in `other`. `rules` are the ids the reader
    can act on: the protocol does not know any (the scripted agent passes its rule library's)."""
    known = tuple(rules)
    out = ChildAnswer()
    section = None
    for raw in text.splitlines():
        line = raw.strip()
        head = line.rstrip(":").upper()
        if head in ("FINDINGS", "UNCERTAIN") and line.endswith(":"):
            section = head
            out.shaped = out.shaped or head == "FINDINGS"
            continue
        if not line.startswith(("-", "*")) or section is None:
            continue
        body = line.lstrip("-* ").strip()
        if not body or body.lower().rstrip(".") in ("none", "(none)", "nothing"):
            continue
        if section == "UNCERTAIN":
            out.uncertain.append(body)
            continue
        source = _SOURCE_RE.search(body)
        where = _PATH_LINE_RE.match(source.group(1)) if source else None
        if source and _CLEAN_RE.search(body):
            for part in source.group(1).split(","):
                path = part.strip().split(":", 1)[0]
                if path and not path.startswith("read_file") and path not in out.clean:
                    out.clean.append(path)
            continue
        rule = next((m.group(1) for m in _RULE_RE.finditer(body) if m.group(1) in known), None)
        rule = rule or next((r for r in known if r in body), None)
        if where and rule:
            path, line_no = where.group(1), int(where.group(2))
            desc = body[: source.start()].strip() if source else body
            desc = re.sub(r"^\S+:\d+:\s*", "", desc)
            desc = re.sub(r"^rule\s+`?[\w-]+`?\s*[:-]?\s*", "", desc, flags=re.I)
            desc = desc.replace("; ", ", ").strip() or rule
            out.findings.append(AnswerFinding(path=path, line=line_no, rule=rule, description=desc))
        else:
            out.other.append(body)
    return out


__all__ = [
    "ANSWER_SHAPE",
    "BRIEF_PREFIX",
    "FILES_LABEL",
    "MAX_ANSWER_WORDS",
    "PARENT_OBJECTIVE_LABEL",
    "AnswerFinding",
    "ChildAnswer",
    "brief_files",
    "child_objective",
    "is_child_objective",
    "parse_answer",
    "shape_answer",
]
