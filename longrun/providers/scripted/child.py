"""The scripted agent as a subagent: the child policy, and the answer it writes.

A child run (a subagent started by the parent's `task` call) is recognised by its objective: it
starts with the line `Subagent brief:` (the workflow ensures that prefix; the brief's format is
`longrun.subagents`). It has read-only tools (`list_dir`, `read_file`, `grep`, `read_artifact`)
and no state tools, so it keeps nothing in the task state: every turn it recomputes what it knows
from its own (short) transcript, the tool_use / tool_result pairs of every earlier turn.

What the child does:
1. the files of the brief are the lines `- <path>` under the last line `Files:` of the objective
   (the workflow writes the `task` call's `paths` there). Without files, it `grep`s the Python
   files for the terms of the parent's objective (the brief's `Objective of the parent run:`
   line, else the whole brief) and takes the best-matching files (up to `CHILD_MAX_FILES`);
2. it reads them, `CHILD_READS_PER_TURN` per turn (one turn for a normal brief), and runs the
   rule library (`rules`) over each; a failed read is retried once;
3. it answers, text only (stop_reason end_turn), in the fixed shape, at most 400 words:

       FINDINGS:
       - <path>:<line>: rule <rule-id>: <what the rule says> (source: <path>:<line>)
       - <path>: no rule fired in <n> lines (source: <path>:1-<n>)
       UNCERTAIN:
       - <path>: could not read it: <error>          (or "- none")

   It never quotes a line of a file (a rule's explanation names the expression, not the line) and
   never asks back. Over 400 words, clean files collapse into one line first, then findings are
   cut and the cut is said under UNCERTAIN. It stops after `CHILD_MAX_TURNS` turns with what it has.

The parent's side, reading such an answer back, is `longrun.subagents.parse_answer` (given the rule
library's ids; see `delegation`): a finding is a line with `(source: <path>:<line>)`, and it counts
as a rule finding when it names a rule of the library, so the parent can record findings with
their file and line.
"""

from __future__ import annotations

from typing import Any

from longrun.models.blocks import Message
from longrun.providers.scripted.objective import objective_terms
from longrun.providers.scripted.rules import Finding, parse_numbered, scan
from longrun.providers.scripted.search import CODE_GLOB, FALLBACK_PATTERN, rank_candidates, terms_pattern
from longrun.providers.scripted.turns import Call, Turn, result_text, short, transcript_pairs
from longrun.subagents import BRIEF_PREFIX, MAX_ANSWER_WORDS, PARENT_OBJECTIVE_LABEL, brief_files

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


# ---------------------------------------------------------------------------------------------
# The answer
# ---------------------------------------------------------------------------------------------


def _words(lines: list[str]) -> int:
    return sum(len(line.split()) for line in lines)


def format_answer(
    findings: list[Finding], clean: list[tuple[str, int]], uncertain: list[str], limit: int = MAX_ANSWER_WORDS
) -> str:
    """The FINDINGS / UNCERTAIN answer, at most `limit` words, without any line of the files."""
    found = [
        f"- {f.path}:{f.line}: rule {f.rule}: {short(f.description, 240)} (source: {f.path}:{f.line})"
        for f in findings
    ]
    cleans = [f"- {p}: no rule fired in {n} lines (source: {p}:1-{n})" for p, n in clean]
    unsure = [f"- {short(u, 240)}" for u in uncertain]

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
        lines = build(found, cleans, [*unsure, f"{cut} more finding(s) not listed ({MAX_ANSWER_WORDS}-word limit)"])
    while _words(lines) > limit and len(unsure) > 1:
        unsure.pop()
        lines = build(found, cleans, unsure)
    text = "\n".join(lines)
    if _words(lines) > limit:  # a pathological single line: cut it by words
        text = " ".join(text.split(" ")[:limit])
    return text


# ---------------------------------------------------------------------------------------------
# The child policy
# ---------------------------------------------------------------------------------------------


class ChildPolicy:
    """The decision procedure of a child run. Pure: the same request gives the same turn."""

    def __init__(self, state: dict[str, Any], messages: list[Message], turn: int) -> None:
        self.objective = str(state.get("objective", ""))
        self.turn = turn
        self.files = brief_files(self.objective)
        self.terms = objective_terms(brief_search_text(self.objective))
        self.reads: dict[str, dict[int, str]] = {}
        self.errors: dict[str, str] = {}
        self.attempts: dict[str, int] = {}
        self.grep: tuple[str, str, bool] | None = None  # (pattern, output, is_error)
        for use, result in transcript_pairs(messages):
            text = result_text(result)
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

    def decide(self) -> Turn:
        files = self.files
        if not files:
            if self.grep is None:
                pattern = terms_pattern(self.terms) or FALLBACK_PATTERN
                return Turn(
                    f"The brief names no files; searching the code for {', '.join(self.terms) or 'definitions'}.",
                    [Call("grep", {"pattern": pattern, "path": ".", "glob": CODE_GLOB})],
                )
            files = [] if self.grep[2] else rank_candidates(self.grep[1], CHILD_MAX_FILES)
        todo = [f for f in files if f not in self.reads and self.attempts.get(f, 0) < 2]
        if todo and self.turn <= CHILD_MAX_TURNS:
            batch = todo[:CHILD_READS_PER_TURN]
            return Turn(
                f"Reading {len(batch)} file(s) of the brief: {', '.join(batch)}.",
                [Call("read_file", {"path": p}) for p in batch],
            )
        return Turn(self.answer(files), final=True)

    def answer(self, files: list[str]) -> str:
        findings: list[Finding] = []
        clean: list[tuple[str, int]] = []
        uncertain: list[str] = []
        if not files:
            if self.grep is None:
                uncertain.append("no files to inspect")
            elif self.grep[2]:
                uncertain.append(f"the search failed: {short(self.grep[1], 160)} (command: grep {self.grep[0]})")
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
                uncertain.append(f"{path}: could not read it: {short(self.errors[path], 160)}")
            else:
                uncertain.append(f"{path}: not read (turn cap of {CHILD_MAX_TURNS} reached)")
        return format_answer(findings, clean, uncertain)
