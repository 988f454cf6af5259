"""When and how the parent policy delegates reading to subagents, and how it reads them back.

Breadth goes to subagents, depth stays here. Only when the request offers a `task` tool (the
workflow decides that; a child run never gets one) and the survey found more than `DELEGATE_ABOVE`
(4) candidate files (up to `MAX_DELEGATED_CANDIDATES`, 12, are kept then, instead of
`MAX_CANDIDATES`), the agent splits the candidates, in rank order, into `min(3, ceil(n / 4))`
contiguous groups and emits one `task` call per group, all in one turn and alone in it, so that
the workflow runs them in parallel. With four candidates or fewer it reads them itself, one per
turn, as before. Each call is `{"brief": ..., "paths": [the group's files]}`; the brief is
self-contained (see `Delegation.brief`):

    Part k of n of a breadth-first forensic review: read the m file(s) listed under Files ...
    Objective of the parent run: <the objective>
    Look for: code related to <terms>; defects such as <the rule library's ids> (...).
    Answer with FINDINGS (...) and UNCERTAIN (...). At most 400 words; never paste file contents ...
    Constraints of the parent run (verbatim, binding):
    - <each constraint of the parent, verbatim>

The next turn reads the answers back (`longrun.subagents.parse_answer`, against the rule library):
each task gets a note `survey: delegated task k/n (<files>): <counts | worker failed: ...>`, each
finding (a line with `(source: <file>:<line>)` naming a rule of the library) an `inspected <file>:
<rule> at line <n>: ...` note and, per suspect file, a `record_decision` citing the subagent, the
rule and file:line; files a subagent found clean are noted as inspected. A `worker failed: ...`
answer (or any error) is noted and the review goes on: that group's files stay uninspected, so
when no subagent found anything the investigate stage reads them itself; the report lists every
task's outcome. The fix stage then works as always: the agent re-reads the suspect file itself
before proposing the patch. The child's side is `child.ChildPolicy`.
"""

from __future__ import annotations

from typing import Any

from longrun.providers.scripted.knowledge import PolicyBase
from longrun.providers.scripted.rules import RULE_IDS, rule_catalogue
from longrun.providers.scripted.turns import Call, Turn, short
from longrun.subagents import MAX_ANSWER_WORDS, PARENT_OBJECTIVE_LABEL, AnswerFinding, parse_answer

DELEGATE_ABOVE = 4  # more candidates than this, and a `task` tool offered: delegate the reading
MAX_TASKS = 3  # at most this many subagents, all in one turn
MAX_DELEGATED_CANDIDATES = 12
MAX_BRIEF_CHARS = 8000


class Delegation(PolicyBase):
    """The parent policy's delegation: the groups, the briefs, the `task` turn, the answers."""

    def groups(self) -> list[list[str]]:
        """The candidates in up to MAX_TASKS contiguous groups (rank order kept), about
        DELEGATE_ABOVE files each."""
        files = self.k.candidates
        n = min(MAX_TASKS, -(-len(files) // DELEGATE_ABOVE))
        size = -(-len(files) // n)
        return [files[i : i + size] for i in range(0, len(files), size)]

    def brief(self, k: int, n: int, files: list[str]) -> str:
        """A self-contained brief: the objective restated, what to look for, how to answer, and the
        parent's constraints verbatim. The files go in the call's `paths` (the workflow lists them
        under `Files:` in the child's objective)."""
        head = [
            f"Part {k} of {n} of a breadth-first forensic review: read the {len(files)} file(s) listed under "
            "Files and report what could explain the objective below. Read only; do not edit or run anything.",
            f"{PARENT_OBJECTIVE_LABEL} {short(self.objective, 2000)}",
            f"Look for: code related to {', '.join(self.terms) or 'the objective'}; defects such as "
            f"{rule_catalogue()} (off-by-one slice ends and ranges, bounds one past the end, truncated "
            "means, identity comparisons with literals).",
            "Answer with FINDINGS (one line per defect: file, line, the rule or reason, and its source as "
            "<file>:<line>; one line per file where nothing fired) and UNCERTAIN (what you could not read "
            f"or confirm). At most {MAX_ANSWER_WORDS} words; never paste file contents; never ask questions back.",
        ]
        text = "\n".join(head)
        if self.constraints_list:
            text += "\nConstraints of the parent run (verbatim, binding):\n" + "\n".join(
                f"- {c}" for c in self.constraints_list
            )
        return text if len(text) <= MAX_BRIEF_CHARS else text[: MAX_BRIEF_CHARS - 20] + "\n[brief cut]"

    def delegate(self) -> Turn:
        """One `task` call per group, all in one turn and alone in it: they run in parallel."""
        groups = self.groups()
        calls = [
            Call("task", {"brief": self.brief(i, len(groups), g), "paths": list(g)})
            for i, g in enumerate(groups, 1)
        ]
        return Turn(
            f"{len(self.k.candidates)} candidate files: more than {DELEGATE_ABOVE}, so {len(groups)} subagents "
            "read them in parallel: " + "; ".join(f"task {i}: {', '.join(g)}" for i, g in enumerate(groups, 1)) + ".",
            calls,
            parallel=True,
        )

    def absorb_task(self, k: str, args: dict[str, Any], text: str, err: bool) -> None:
        """A subagent's answer: its findings and clean files become notes (as if read here), one
        decision per suspect file; a failure is noted and its files stay uninspected."""
        paths = [str(p) for p in args.get("paths") or []]
        label = f"survey: delegated task {k} ({', '.join(paths) or 'no files'})"
        if err or text.startswith("worker failed"):
            failure = text if text.startswith("worker failed") else f"failed: {text}"
            self.note(f"{label}: {short(failure, 240)}")
            return
        answer = parse_answer(text, RULE_IDS)
        if not answer.shaped:
            self.note(f"{label}: answer not in the FINDINGS/UNCERTAIN shape: {short(text, 200)}")
            return
        by_path: dict[str, list[AnswerFinding]] = {}
        for f in answer.findings:
            by_path.setdefault(f.path, []).append(f)
        summary = [f"{len(answer.findings)} finding(s) in {len(by_path)} file(s)", f"{len(answer.clean)} clean"]
        if answer.other:
            summary.append(f"{len(answer.other)} other: " + " | ".join(short(o, 100) for o in answer.other[:3]))
        if answer.uncertain:
            summary.append("uncertain: " + " | ".join(short(u, 100) for u in answer.uncertain[:3]))
        self.note(f"{label}: " + ", ".join(summary))
        for path, found in by_path.items():
            if path in self.k.inspected:
                continue
            self.note(
                f"inspected {path}: "
                + "; ".join(f"{f.rule} at line {f.line}: {short(f.description, 160)}" for f in found[:3])
            )
            first = found[0]
            if path not in self.decided_paths and not any(
                c.name == "record_decision" and c.input["summary"].startswith(f"Suspect defect in {path} ")
                for c in self.processing
            ):
                self.processing.append(
                    Call(
                        "record_decision",
                        {
                            "summary": f"Suspect defect in {path} line {first.line}: {short(first.description, 200)}",
                            "reason": f"subagent task {k} reported rule {first.rule} at {path}:{first.line} "
                            f"(source: {path}:{first.line}) in its survey of {len(paths)} file(s) for "
                            f"{', '.join(self.terms) or 'the code files'}",
                        },
                    )
                )
        for path in answer.clean:
            if path not in self.k.inspected and path not in by_path:
                self.note(f"inspected {path}: clean (subagent task {k})")
