"""The `scripted` provider's child policy, and the brief and answer formats it shares with the parent.

A child run (a subagent started by the parent's `task` call) is recognised by its objective: it
starts with the line `Subagent brief:` (the workflow ensures that prefix). It has read-only tools
(`list_dir`, `read_file`, `grep`, `read_artifact`) and no state tools, so it keeps nothing in the
task state: every turn it recomputes what it knows from its own (short) transcript, the
tool_use / tool_result pairs of every earlier turn.

What the child does:
1. the files of the brief are the lines `- <path>` under the last line `Files:` of the objective
   (the workflow writes the `task` call's `paths` there). Without files, it `grep`s the Python
   files for the terms of the parent's objective (the brief's `Objective of the parent run:`
   line, else the whole brief) and takes the best-matching files (up to `CHILD_MAX_FILES`);
2. it reads them, `CHILD_READS_PER_TURN` per turn (one turn for a normal brief), and runs the
   rule library (`rules.py`) over each; a failed read is retried once;
3. it answers, text only (stop_reason end_turn), in the fixed shape, at most 400 words:

       FINDINGS:
       - <path>:<line>: rule <rule-id>: <what the rule says> (source: <path>:<line>)
       - <path>: no rule fired in <n> lines (source: <path>:1-<n>)
       UNCERTAIN:
       - <path>: could not read it: <error>          (or "- none")

   It never quotes a line of a file (a rule's explanation names the expression, not the line) and
   never asks back. Over 400 words, clean files collapse into one line first, then findings are
   cut and the cut is said under UNCERTAIN. It stops after `CHILD_MAX_TURNS` turns with what it has.

`parse_answer` is the parent's side: it reads any answer in that shape back (tolerantly: a finding
is a line with `(source: <path>:<line>)`; it counts as a rule finding when it names a rule of the
library), so the parent can record findings with their file and line.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from longrun.models.blocks import Message, ToolResultBlock, ToolUseBlock
from longrun.providers.rules import RULES, Finding, parse_numbered, scan
from longrun.subagents import BRIEF_PREFIX, MAX_ANSWER_WORDS, PARENT_OBJECTIVE_LABEL, brief_files

if TYPE_CHECKING:
    from longrun.providers.scripted import Turn

CHILD_MAX_TURNS = 8
CHILD_MAX_FILES = 12
CHILD_READS_PER_TURN = 12
CHILD_LABEL = "scripted subagent (deterministic offline stand-in for a model)"

def brief_search_text(objective: str) -> str:
    """What the child searches for when the brief names no files: the parent's objective if the
    brief quotes it, else the brief itself (without the prefix)."""
    for line in objective.splitlines():
        if line.strip().startswith(PARENT_OBJECTIVE_LABEL):
            return line.strip()[len(PARENT_OBJECTIVE_LABEL) :].strip()
    text = objective.lstrip()
    while text.startswith(BRIEF_PREFIX):
        text = text[len(BRIEF_PREFIX) :].lstrip()
    return text.split("\n\n", 1)[0]


def rule_catalogue() -> str:
    """The rule library in one sentence, for briefs."""
    return "; ".join(f"{r.id}" for r in RULES)


# ---------------------------------------------------------------------------------------------
# The answer: writing it (child) and reading it back (parent)
# ---------------------------------------------------------------------------------------------


def _words(lines: list[str]) -> int:
    return sum(len(line.split()) for line in lines)


def format_answer(
    findings: list[Finding], clean: list[tuple[str, int]], uncertain: list[str], limit: int = MAX_ANSWER_WORDS
) -> str:
    """The FINDINGS / UNCERTAIN answer, at most `limit` words, without any line of the files."""
    found = [
        f"- {f.path}:{f.line}: rule {f.rule}: {_one_line(f.description)} (source: {f.path}:{f.line})" for f in findings
    ]
    cleans = [f"- {p}: no rule fired in {n} lines (source: {p}:1-{n})" for p, n in clean]
    unsure = [f"- {_one_line(u)}" for u in uncertain]

    def build(found: list[str], cleans: list[str], unsure: list[str]) -> list[str]:
        return ["FINDINGS:", *(found + cleans or ["- none"]), "UNCERTAIN:", *(unsure or ["- none"])]

    lines = build(found, cleans, unsure)
    if _words(lines) > limit and len(cleans) > 1:
        sources = ", ".join(f"{p}:1-{n}" for p, n in clean)
        cleans = [f"- no rule fired in {len(clean)} files (source: {sources})"]
        lines = build(found, cleans, unsure)
    if _words(lines) > limit:
        cleans = [f"- no rule fired in {len(clean)} other files (source: read_file of each)"] if clean else []
        lines = build(found, cleans, unsure)
    cut = 0
    while _words(lines) > limit and found:
        found.pop()
        cut += 1
        lines = build(found, cleans, unsure + [f"{cut} more finding(s) not listed ({MAX_ANSWER_WORDS}-word limit)"])
    while _words(lines) > limit and len(unsure) > 1:
        unsure.pop()
        lines = build(found, cleans, unsure)
    text = "\n".join(lines)
    if _words(lines) > limit:  # a pathological single line: cut it by words
        text = " ".join(text.split(" ")[:limit])
    return text


def _one_line(text: str, limit: int = 240) -> str:
    one = " ".join(str(text).split())
    return one if len(one) <= limit else one[: limit - 3] + "..."


# ---------------------------------------------------------------------------------------------
# The child policy
# ---------------------------------------------------------------------------------------------


def _pairs(messages: list[Message]) -> list[tuple[ToolUseBlock, ToolResultBlock]]:
    """Every (tool_use, tool_result) pair of the transcript, in order."""
    out: list[tuple[ToolUseBlock, ToolResultBlock]] = []
    for i, message in enumerate(messages[:-1]):
        if message.role != "assistant":
            continue
        nxt = messages[i + 1]
        results = {r.tool_use_id: r for r in nxt.tool_results()} if nxt.role == "user" else {}
        out += [(u, results[u.id]) for u in message.tool_uses() if u.id in results]
    return out


class ChildPolicy:
    """The decision procedure of a child run. Pure: the same request gives the same turn."""

    def __init__(self, state: dict[str, Any], messages: list[Message], turn: int) -> None:
        # Imported here: scripted.py imports this module lazily, and this one needs its helpers.
        from longrun.providers import scripted as s

        self.s = s
        self.objective = str(state.get("objective", ""))
        self.turn = turn
        self.files = brief_files(self.objective)
        self.terms = s.objective_terms(brief_search_text(self.objective))
        self.reads: dict[str, dict[int, str]] = {}
        self.errors: dict[str, str] = {}
        self.attempts: dict[str, int] = {}
        self.grep: tuple[str, str, bool] | None = None  # (pattern, output, is_error)
        for use, result in _pairs(messages):
            text = s._result_text(result)
            if use.name == "read_file":
                path = str(use.input.get("path", ""))
                self.attempts[path] = self.attempts.get(path, 0) + 1
                lines = parse_numbered(text)
                if result.is_error:
                    self.errors[path] = text
                elif lines or not text.strip():
                    self.reads[path] = lines
                    self.errors.pop(path, None)
            elif use.name == "grep":
                self.grep = (str(use.input.get("pattern", "")), text, result.is_error)

    def decide(self) -> "Turn":
        s = self.s
        files = self.files
        if not files:
            if self.grep is None:
                pattern = s.terms_pattern(self.terms) or s.FALLBACK_PATTERN
                return s.Turn(
                    f"The brief names no files; searching the code for {', '.join(self.terms) or 'definitions'}.",
                    [s.Call("grep", {"pattern": pattern, "path": ".", "glob": s.CODE_GLOB})],
                )
            files = [] if self.grep[2] else s.rank_candidates(self.grep[1], CHILD_MAX_FILES)
        todo = [f for f in files if f not in self.reads and self.attempts.get(f, 0) < 2]
        if todo and self.turn <= CHILD_MAX_TURNS:
            batch = todo[:CHILD_READS_PER_TURN]
            return s.Turn(
                f"Reading {len(batch)} file(s) of the brief: {', '.join(batch)}.",
                [s.Call("read_file", {"path": p}) for p in batch],
            )
        return s.Turn(self.answer(files), final=True)

    def answer(self, files: list[str]) -> str:
        findings: list[Finding] = []
        clean: list[tuple[str, int]] = []
        uncertain: list[str] = []
        if not files:
            if self.grep is None:
                uncertain.append("no files to inspect")
            elif self.grep[2]:
                uncertain.append(f"the search failed: {_one_line(self.grep[1], 160)} (command: grep {self.grep[0]})")
            else:
                uncertain.append(f"no Python file matched the brief's terms (command: grep {self.grep[0]})")
        for path in files:
            if path in self.reads:
                lines = self.reads[path]
                if not path.endswith(".py"):
                    uncertain.append(f"{path}: read ({len(lines)} lines); the rule library covers Python files only")
                    continue
                hits = scan(path, lines)
                if hits:
                    findings += hits
                else:
                    clean.append((path, len(lines)))
            elif path in self.errors:
                uncertain.append(f"{path}: could not read it: {_one_line(self.errors[path], 160)}")
            else:
                uncertain.append(f"{path}: not read (turn cap of {CHILD_MAX_TURNS} reached)")
        return format_answer(findings, clean, uncertain)


__all__ = ["ChildPolicy", "format_answer"]
