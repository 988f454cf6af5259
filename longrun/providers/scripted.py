"""The `scripted` provider: a deterministic, offline stand-in for a model.

It is **not a language model**. It is an agent *policy* written in Python that drives a real
forensic review of a workspace through longrun's tools, so the demo and the tests run with no API
key and no network, and every run is reproducible byte for byte.

Each `complete()` reads only the request:
- the task-state block (the last `<task_state>` in the last user message): objective,
  constraints, current_step, next_action, notes, decisions;
- the results of its own previous turn (the tool_result blocks of the last user message).

Older tool output may have been compacted away, so everything it learns goes into the state at
once (`write_note`, `record_decision`), and every decision is recomputed from the state block plus
the last results. Notes it writes start with a keyword it parses back (`survey:`, `inspected`,
`edit applied:` / `edit not applied:` / `edit skipped:`, `verify:`, `tool error:`).

The review, stage by stage (`complete_stage` advances survey -> investigate -> fix -> verify ->
report -> done):
- survey: `list_dir .`, then `grep` the Python files for the objective's terms (every code file
  when no term matches); the best-matching non-test files become the candidates.
- investigate: `read_file` each candidate and run the rule library (`rules.py`) over it; a rule
  that fires is recorded with `write_note` and `record_decision` (the rule and line in the reason).
  The search stops at the first file where a rule fires.
- fix: `set_next_action edit`, re-read the file, then `apply_patch` (needs a human's approval).
  A constraint such as "do not modify tests/" or "read-only" is respected: the edit is skipped
  and the note says which constraint forbade it. A rejected, denied or expired edit is noted and
  the review moves on.
- verify: runs the test command, if the run has one (see below), under `next_action test`.
- report: `set_next_action stop`, `complete_stage`, then a final text report (stop_reason
  end_turn, no tool calls).

**When it delegates (subagents).** Breadth goes to subagents, depth stays here. Only when the
request offers a `task` tool (the workflow decides that; a child run never gets one) and the survey
found more than `DELEGATE_ABOVE` (4) candidate files (up to `MAX_DELEGATED_CANDIDATES`, 12, are
kept then, instead of `MAX_CANDIDATES`), the agent splits the candidates, in rank order, into
`min(3, ceil(n / 4))` contiguous groups and emits one `task` call per group, all in one turn and
alone in it, so that the workflow runs them in parallel. With four candidates or fewer it reads them
itself, one per turn, as before. Each call is `{"brief": ..., "paths": [the group's files]}`; the
brief is self-contained (see `Policy.brief`):

    Part k of n of a breadth-first forensic review: read the m file(s) listed under Files ...
    Objective of the parent run: <the objective>
    Look for: code related to <terms>; defects such as <the rule library's ids> (...).
    Answer with FINDINGS (...) and UNCERTAIN (...). At most 400 words; never paste file contents ...
    Constraints of the parent run (verbatim, binding):
    - <each constraint of the parent, verbatim>

The next turn reads the answers back (`scripted_subagent.parse_answer`): each task gets a note
`survey: delegated task k/n (<files>): <counts | worker failed: ...>`, each finding (a line with
`(source: <file>:<line>)` naming a rule of the library) an `inspected <file>: <rule> at line <n>:
...` note and, per suspect file, a `record_decision` citing the subagent, the rule and file:line;
files a subagent found clean are noted as inspected. A `worker failed: ...` answer (or any error)
is noted and the review goes on: that group's files stay uninspected, so when no subagent found
anything the investigate stage reads them itself; the report lists every task's outcome. The fix
stage then works as always: the agent re-reads the suspect file itself before proposing the patch.
A run whose objective starts with `Subagent brief:` is a child: `scripted_subagent.ChildPolicy`
answers it (reads the brief's files, runs the rule library, answers FINDINGS / UNCERTAIN).

**How it finds the test command.** The allowed commands are not in the state block, so the agent
only ever runs an argv it was *told*: a constraint (or a line of the objective) of the form
`tests: <argv...>` (also `test command: <argv...>`), split like a shell would (shlex), without a
shell. The run's allow-list still decides; a refusal is noted and the review moves on. No hint, no
command: the verify stage notes that and continues.

Safety: a call that already failed (recorded as `tool error:`) is never repeated; the agent stops
with its report instead. It also stops after `MAX_TURNS` visible turns. Tool-use ids are
`toolu_s{turn:04d}_{i}_{digest}`, where `digest` hashes the request, so they are unique across a
compacted run and identical when the very same request is retried.
"""

from __future__ import annotations

import fnmatch
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from longrun.context.state_block import parse_state_block
from longrun.context.tokens import estimate_messages, estimate_request
from longrun.models.blocks import Block, Message, TextBlock, ToolResultBlock, ToolUseBlock
from longrun.models.canonical import canonical_json, sha256_hex
from longrun.models.provider import ModelInfo, ModelRequest, ModelResponse, Usage
from longrun.providers.models_table import SCRIPTED, SCRIPTED_INFO
from longrun.providers.rules import Finding, parse_numbered, propose_patch, scan

MAX_CANDIDATES = 4
DELEGATE_ABOVE = 4  # more candidates than this, and a `task` tool offered: delegate the reading
MAX_TASKS = 3  # at most this many subagents, all in one turn
MAX_DELEGATED_CANDIDATES = 12
MAX_BRIEF_CHARS = 8000
MAX_TURNS = 80
MAX_CALLS_PER_TURN = 2
NOTE_LIMIT = 600
FALLBACK_PATTERN = r"^\s*(def|class) "
CODE_GLOB = "*.py"
AGENT_LABEL = "scripted agent (deterministic offline stand-in for a model)"

_STOPWORDS = frozenset(
    """about above after again against also another anything around because been before being below
    between both bug bugs cause caused check code could defect defects does doing done during each
    else error errors every expected file files find finding fix fixed fixes from have having into
    issue issues just look looks make more most much must need only other over please project
    propose proposed report repository return returns review should some still such than that their
    them then there these they this those through under until very wait what when where which while
    with without workspace would wrong test tests""".split()
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
_EXIT_RE = re.compile(r"^exit code:\s*(-?\d+)", re.M)


# ---------------------------------------------------------------------------------------------
# What the agent knows: parsed back from its notes, plus what it learned this turn
# ---------------------------------------------------------------------------------------------


@dataclass
class Knowledge:
    listed: bool = False
    surveyed: bool = False
    terms_missed: bool = False
    candidates: list[str] = field(default_factory=list)
    inspected: dict[str, str] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    edit: str | None = None
    verify: str | None = None
    errors: list[str] = field(default_factory=list)
    delegations: list[tuple[str, str, str]] = field(default_factory=list)  # (k/n, files, outcome)

    def learn(self, note: str) -> None:
        for line in note.splitlines():
            self._learn_line(line.strip())

    def _learn_line(self, line: str) -> None:
        if line.startswith("survey: listed "):
            self.listed = True
        elif line.startswith("survey: no file mentions "):
            self.terms_missed = True
        elif m := re.match(r"^survey: delegated task (\d+/\d+) \((.*?)\): (.*)$", line):
            self.delegations.append((m.group(1), m.group(2), m.group(3)))
        elif m := re.match(r"^survey: candidates(?: for .*?)?: (.*)$", line):
            self.surveyed = True
            rest = m.group(1).strip()
            self.candidates = [] if rest.startswith("(none)") else [p.strip() for p in rest.split(", ") if p.strip()]
        elif m := re.match(r"^inspected (\S+): (.*)$", line):
            path, rest = m.group(1), m.group(2)
            self.inspected[path] = rest
            for part in rest.split("; "):
                f = re.match(r"^(\S+) at line (\d+): (.*?)(?: \(`(.*)`\))?$", part)
                if f and f.group(1) not in ("clean", "unreadable"):
                    self.findings.append(Finding(path, int(f.group(2)), f.group(1), f.group(3), f.group(4) or ""))
        elif re.match(r"^edit (applied|not applied|skipped): ", line):
            self.edit = line
        elif line.startswith("verify: "):
            self.verify = line
        elif line.startswith("tool error: "):
            self.errors.append(line)


@dataclass(frozen=True)
class Call:
    name: str
    input: dict[str, Any]

    @property
    def signature(self) -> str:
        return f"{self.name} {canonical_json(self.input)}"[:200]


@dataclass(frozen=True)
class Constraints:
    """What the visible constraints forbid, as the agent understands them."""

    texts: tuple[str, ...]
    forbidden_paths: tuple[tuple[str, str], ...]  # (pattern, constraint text)
    no_edits: str | None
    no_commands: str | None

    @classmethod
    def parse(cls, constraints: list[str]) -> "Constraints":
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


def terms_pattern(terms: list[str]) -> str | None:
    return r"(?i)\b(" + "|".join(re.escape(t) for t in terms) + ")" if terms else None


def is_test_path(path: str) -> bool:
    parts = path.replace("\\", "/").split("/")
    name = parts[-1]
    return any(p in ("tests", "test") for p in parts[:-1]) or name.startswith("test_") or name.endswith("_test.py")


def rank_candidates(grep_output: str, limit: int = MAX_CANDIDATES) -> list[str]:
    """Files with the most matching lines first; non-test files before tests."""
    counts: dict[str, int] = {}
    for line in grep_output.splitlines():
        m = re.match(r"^(.+?):(\d+):", line)
        if m:
            counts[m.group(1)] = counts.get(m.group(1), 0) + 1
    code = sorted((p for p in counts if not is_test_path(p)), key=lambda p: (-counts[p], p))
    tests = sorted((p for p in counts if is_test_path(p)), key=lambda p: (-counts[p], p))
    return (code or tests)[:limit]


def _result_text(result: ToolResultBlock) -> str:
    if isinstance(result.content, str):
        return result.content
    parts = [str(c.get("text", "")) for c in result.content if isinstance(c, dict) and c.get("type") == "text"]
    return "\n".join(parts)


def _short(text: str, limit: int = 160) -> str:
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 3] + "..."


# ---------------------------------------------------------------------------------------------
# One turn of the policy
# ---------------------------------------------------------------------------------------------


@dataclass
class Turn:
    """What the agent does this turn: a sentence, tool calls, or a final report."""

    text: str
    calls: list[Call] = field(default_factory=list)
    final: bool = False
    parallel: bool = False  # the calls go out together, alone in their turn (subagents)


class Policy:
    """The decision procedure for one request. Pure: the same request gives the same Turn."""

    def __init__(
        self,
        state: dict[str, Any],
        last: list[tuple[ToolUseBlock, ToolResultBlock]],
        turn: int,
        tools: frozenset[str] = frozenset(),
    ) -> None:
        self.state = state
        self.last = last
        self.turn = turn
        self.can_delegate = "task" in tools
        self.objective = str(state.get("objective", ""))
        self.constraints_list = [str(c) for c in state.get("constraints") or []]
        self.constraints = Constraints.parse(self.constraints_list)
        self.step = str(state.get("current_step", "survey"))
        self.next_action = str(state.get("next_action", "inspect"))
        self.terms = objective_terms(self.objective)
        self.test_argv = find_test_command(self.objective, self.constraints_list)
        self.k = Knowledge()
        for note in state.get("notes") or []:
            self.k.learn(str(note))
        self.decided_paths = {
            m.group(1)
            for d in state.get("decisions") or []
            if (m := re.match(r"^Suspect defect in (\S+) ", str(d.get("summary", ""))))
        }
        self.new_notes: list[str] = []
        self.processing: list[Call] = []
        self.fresh: dict[str, dict[int, str]] = {}

    # -- absorbing the last results -------------------------------------------------------------

    def note(self, text: str) -> None:
        text = text[:NOTE_LIMIT]
        self.new_notes.append(text)
        self.k.learn(text)

    def absorb(self) -> None:
        tasks = [use for use, _ in self.last if use.name == "task"]
        for use, result in self.last:
            text = _result_text(result)
            err = result.is_error
            name, args = use.name, use.input
            if name == "list_dir":
                entries = [e for e in text.splitlines() if e.strip()]
                shown = ", ".join(entries[:30]) + (", ..." if len(entries) > 30 else "")
                where = args.get("path", ".")
                self.note(f"survey: listed {where}: failed: {_short(text)}" if err else f"survey: listed {where}: {shown}")
            elif name == "grep":
                pattern = str(args.get("pattern", ""))
                is_terms = pattern == terms_pattern(self.terms)
                label = "|".join(self.terms) if is_terms else "code files"
                if err:
                    self.note(f"survey: candidates for {label}: (none) grep failed: {_short(text)}")
                    continue
                ranked = rank_candidates(text, MAX_DELEGATED_CANDIDATES if self.can_delegate else MAX_CANDIDATES)
                head = f"survey: candidates for {label}: "
                while len(head + ", ".join(ranked)) > NOTE_LIMIT and len(ranked) > 1:
                    ranked.pop()  # the note must hold every candidate it names
                if ranked:
                    self.note(head + ", ".join(ranked))
                elif is_terms:
                    self.note(f"survey: no file mentions {label}")
                else:
                    self.note("survey: candidates for code files: (none)")
            elif name == "read_file":
                self._absorb_read(str(args.get("path", "")), text, err)
            elif name == "task":
                self._absorb_task(f"{tasks.index(use) + 1}/{len(tasks)}", args, text, err)
            elif name == "apply_patch":
                path = str(args.get("path", ""))
                rule = self._finding_for(path)
                why = f" ({rule.rule} at line {rule.line})" if rule else ""
                if err:
                    self.note(f"edit not applied: {path}{why}: {_short(text)}")
                else:
                    self.note(f"edit applied: {path}{why}: {_short(text, 120)}")
            elif name == "run_command":
                cmd = shlex.join([str(a) for a in args.get("argv", [])])
                m = _EXIT_RE.search(text)
                if err or not m:
                    self.note(f"verify: `{cmd}` not run: {_short(text)}")
                else:
                    code = int(m.group(1))
                    verdict = "tests pass" if code == 0 else "tests fail"
                    self.note(f"verify: `{cmd}` exit code {code} ({verdict})")
            elif err:
                self.note(f"tool error: {Call(name, dict(args)).signature}: {_short(text)}")

    def _absorb_read(self, path: str, text: str, err: bool) -> None:
        if err:
            if path not in self.k.inspected:
                self.note(f"inspected {path}: unreadable: {_short(text)}")
            return
        lines = parse_numbered(text)
        if path in self.k.inspected:  # a fresh read before an edit: no new note
            self.fresh[path] = lines
            return
        findings = scan(path, lines)
        if not findings:
            self.note(f"inspected {path}: clean ({len(lines)} lines)")
            return
        self.note(
            f"inspected {path}: "
            + "; ".join(f"{f.rule} at line {f.line}: {f.description} (`{_short(f.text, 100)}`)" for f in findings[:3])
        )
        first = findings[0]
        if path not in self.decided_paths:
            self.processing.append(
                Call(
                    "record_decision",
                    {
                        "summary": f"Suspect defect in {path} line {first.line}: {first.description}",
                        "reason": f"scripted rule {first.rule} fired on `{_short(first.text, 120)}` "
                        f"after the survey for {', '.join(self.terms) or 'the code files'} led to {path}",
                    },
                )
            )
        self.fresh[path] = lines

    def _absorb_task(self, k: str, args: dict[str, Any], text: str, err: bool) -> None:
        """A subagent's answer: its findings and clean files become notes (as if read here), one
        decision per suspect file; a failure is noted and its files stay uninspected."""
        from longrun.providers.rules import RULES_BY_ID
        from longrun.subagents import parse_answer

        paths = [str(p) for p in args.get("paths") or []]
        label = f"survey: delegated task {k} ({', '.join(paths) or 'no files'})"
        if err or text.startswith("worker failed"):
            failure = text if text.startswith("worker failed") else f"failed: {text}"
            self.note(f"{label}: {_short(failure, 240)}")
            return
        answer = parse_answer(text, RULES_BY_ID)
        if not answer.shaped:
            self.note(f"{label}: answer not in the FINDINGS/UNCERTAIN shape: {_short(text, 200)}")
            return
        by_path: dict[str, list[Finding]] = {}
        for f in answer.findings:
            by_path.setdefault(f.path, []).append(f)
        summary = [f"{len(answer.findings)} finding(s) in {len(by_path)} file(s)", f"{len(answer.clean)} clean"]
        if answer.other:
            summary.append(f"{len(answer.other)} other: " + " | ".join(_short(o, 100) for o in answer.other[:3]))
        if answer.uncertain:
            summary.append("uncertain: " + " | ".join(_short(u, 100) for u in answer.uncertain[:3]))
        self.note(f"{label}: " + ", ".join(summary))
        for path, found in by_path.items():
            if path in self.k.inspected:
                continue
            self.note(
                f"inspected {path}: "
                + "; ".join(f"{f.rule} at line {f.line}: {_short(f.description, 160)}" for f in found[:3])
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
                            "summary": f"Suspect defect in {path} line {first.line}: {_short(first.description, 200)}",
                            "reason": f"subagent task {k} reported rule {first.rule} at {path}:{first.line} "
                            f"(source: {path}:{first.line}) in its survey of {len(paths)} file(s) for "
                            f"{', '.join(self.terms) or 'the code files'}",
                        },
                    )
                )
        for path in answer.clean:
            if path not in self.k.inspected and path not in by_path:
                self.note(f"inspected {path}: clean (subagent task {k})")

    def _finding_for(self, path: str) -> Finding | None:
        return next((f for f in self.k.findings if f.path == path), None)

    # -- deciding ------------------------------------------------------------------------------

    def decide(self) -> Turn:
        self.absorb()
        if self.step == "done" or (self.next_action == "stop" and not self.last_made_progress()):
            return Turn(self.report(), final=True)
        if self.turn > MAX_TURNS:
            return Turn(self.report(f"Stopping after {MAX_TURNS} turns."), final=True)
        handler = {
            "survey": self.survey,
            "investigate": self.investigate,
            "fix": self.fix,
            "verify": self.verify,
            "report": self.report_stage,
        }.get(self.step)
        plan = handler() if handler else Turn(f"Unknown step {self.step!r}; reporting.", final=True)
        if plan.final:
            plan.text = self.report(plan.text)
        blocked = next((c for c in plan.calls if any(e.startswith(f"tool error: {c.signature}") for e in self.k.errors)), None)
        if blocked is not None:
            return Turn(self.report(f"`{blocked.name}` was refused before; not repeating it."), final=True)
        calls: list[Call] = []
        if self.new_notes:
            calls.append(Call("write_note", {"text": "\n".join(self.new_notes)}))
        calls += self.processing
        if plan.parallel:
            # Subagent calls go out together and alone; bookkeeping first, the plan next turn.
            return Turn("Recording what the last tool results showed.", calls) if calls else plan
        if plan.final and calls:
            # Record what was learned first; the report comes next turn.
            return Turn("Recording what the last tool results showed.", calls[:MAX_CALLS_PER_TURN])
        # Bookkeeping calls always go out; the plan's own calls fill the turn up to the cap, and
        # whatever is cut is recomputed next turn from the state (the policy is pure).
        keep = max(MAX_CALLS_PER_TURN, len(calls))
        text = plan.text if len(calls) < keep or not plan.calls else "Recording what the last tool results showed."
        calls += plan.calls
        return Turn(text, calls[:keep], plan.final)

    def last_made_progress(self) -> bool:
        return bool(self.new_notes or self.processing)

    def survey(self) -> Turn:
        if not self.k.listed:
            return Turn("Surveying the workspace layout.", [Call("list_dir", {"path": "."})])
        if not self.k.surveyed:
            pattern = terms_pattern(self.terms)
            if pattern and not self.k.terms_missed:
                return Turn(
                    f"Searching the code for the objective's terms: {', '.join(self.terms)}.",
                    [Call("grep", {"pattern": pattern, "path": ".", "glob": CODE_GLOB})],
                )
            return Turn("No file names the objective's terms; listing every code file.",
                        [Call("grep", {"pattern": FALLBACK_PATTERN, "path": ".", "glob": CODE_GLOB})])
        if self.can_delegate and len(self.k.candidates) > DELEGATE_ABOVE and not self.k.delegations:
            return self.delegate()
        summary = (
            f"Survey done: {len(self.k.candidates)} candidate file(s) to inspect: {', '.join(self.k.candidates)}"
            if self.k.candidates
            else "Survey done: no candidate files found"
        )
        if self.k.delegations:
            failed = [k for k, _, outcome in self.k.delegations if outcome.startswith(("worker failed", "failed", "answer not"))]
            summary += f"; read by {len(self.k.delegations)} subagent(s)"
            summary += f", task(s) {', '.join(failed)} failed" if failed else ""
        return Turn(summary + ".", [Call("complete_stage", {"summary": summary})])

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
        from longrun.providers.scripted_subagent import rule_catalogue
        from longrun.subagents import PARENT_OBJECTIVE_LABEL

        head = [
            f"Part {k} of {n} of a breadth-first forensic review: read the {len(files)} file(s) listed under "
            "Files and report what could explain the objective below. Read only; do not edit or run anything.",
            f"{PARENT_OBJECTIVE_LABEL} {_short(self.objective, 2000)}",
            f"Look for: code related to {', '.join(self.terms) or 'the objective'}; defects such as "
            f"{rule_catalogue()} (off-by-one slice ends and ranges, bounds one past the end, truncated "
            "means, identity comparisons with literals).",
            "Answer with FINDINGS (one line per defect: file, line, the rule or reason, and its source as "
            "<file>:<line>; one line per file where nothing fired) and UNCERTAIN (what you could not read "
            "or confirm). At most 400 words; never paste file contents; never ask questions back.",
        ]
        text = "\n".join(head)
        if self.constraints_list:
            text += "\nConstraints of the parent run (verbatim, binding):\n" + "\n".join(
                f"- {c}" for c in self.constraints_list
            )
        return text if len(text) <= MAX_BRIEF_CHARS else text[: MAX_BRIEF_CHARS - 20] + "\n[brief cut]"

    def delegate(self) -> Turn:
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

    def investigate(self) -> Turn:
        remaining = [p for p in self.k.candidates if p not in self.k.inspected]
        if self.k.findings or not remaining:
            if self.k.findings:
                f = self.k.findings[0]
                summary = f"Investigation found {len(self.k.findings)} suspect(s); first: {f.path} line {f.line} ({f.rule})"
            else:
                summary = f"Investigation inspected {len(self.k.inspected)} file(s); no rule fired"
            return Turn(summary + ".", [Call("complete_stage", {"summary": summary})])
        path = remaining[0]
        return Turn(f"Reading {path}.", [Call("read_file", {"path": path})])

    def fix(self) -> Turn:
        if self.k.edit is None:
            target = next((f for f in self.k.findings if not self.constraints.forbids_edit(f.path)), None)
            if target is None:
                if self.k.findings:
                    f = self.k.findings[0]
                    rule = self.constraints.forbids_edit(f.path)
                    self.note(f'edit skipped: {f.path}: constraint "{_short(rule or "", 200)}" forbids editing it')
                else:
                    self.note("edit skipped: no rule fired on the inspected files; nothing to fix")
            elif self.next_action != "edit":
                return Turn(
                    f"Preparing an edit of {target.path}: re-reading it first.",
                    [Call("set_next_action", {"next_action": "edit"}), Call("read_file", {"path": target.path})],
                )
            elif target.path in self.fresh:
                patch = propose_patch(target, self.fresh[target.path])
                if patch is not None:
                    return Turn(
                        f"Proposing a fix for {target.path} line {patch.line} (rule {target.rule}): "
                        f"{target.description}. This edit needs a human's approval.",
                        [Call("apply_patch", {"path": patch.path, "old": patch.old, "new": patch.new})],
                    )
                self.note(f"edit skipped: {target.path}: rule {target.rule} no longer fires or has no automatic fix")
            else:
                return Turn(f"Re-reading {target.path} before editing it.", [Call("read_file", {"path": target.path})])
        assert self.k.edit is not None
        run_tests = bool(self.test_argv) and not self.constraints.no_commands and self.k.verify is None
        return Turn(
            "Fix stage done.",
            [
                Call("complete_stage", {"summary": f"Fix stage: {_short(self.k.edit, 300)}"}),
                Call("set_next_action", {"next_action": "test" if run_tests else "inspect"}),
            ],
        )

    def verify(self) -> Turn:
        if self.k.verify is None:
            if self.test_argv and not self.constraints.no_commands:
                if self.next_action != "test":
                    return Turn("Switching to testing.", [Call("set_next_action", {"next_action": "test"})])
                return Turn(f"Running the tests: {shlex.join(self.test_argv)}.",
                            [Call("run_command", {"argv": list(self.test_argv)})])
            if self.test_argv:
                self.note(f'verify: not run: constraint "{_short(self.constraints.no_commands or "", 200)}" forbids commands')
            else:
                self.note("verify: not run: no test command given (a constraint `tests: <argv...>` names one)")
        assert self.k.verify is not None
        return Turn("Verification stage done.",
                    [Call("complete_stage", {"summary": f"Verification: {_short(self.k.verify[len('verify: '):], 300)}"})])

    def report_stage(self) -> Turn:
        if self.next_action == "stop":
            return Turn(self.report(), [Call("complete_stage", {"summary": "Report written; review finished"})])
        return Turn(
            self.report(),
            [Call("set_next_action", {"next_action": "stop"}),
             Call("complete_stage", {"summary": "Report written; review finished"})],
        )

    def report(self, lead: str = "") -> str:
        k = self.k
        lines = [f"Forensic review report by the {AGENT_LABEL}." + (f" {lead}" if lead else "")]
        lines.append(f"Objective: {_short(self.objective, 300)}")
        if k.candidates:
            lines.append(f"Files inspected: {', '.join(p for p in k.candidates if p in k.inspected) or 'none'}")
        for part, files, outcome in k.delegations:
            lines.append(f"Subagent task {part} ({_short(files, 160)}): {_short(outcome, 200)}")
        if k.findings:
            for f in k.findings[:5]:
                lines.append(f"Finding: {f.path} line {f.line}: {f.description} [rule {f.rule}]")
        else:
            lines.append("Finding: no rule of the scripted library fired.")
        lines.append(f"Edit: {k.edit[len('edit '):] if k.edit else 'none proposed'}")
        lines.append(f"Verification: {k.verify[len('verify: '):] if k.verify else 'not run'}")
        if self.constraints_list:
            lines.append("Constraints respected: " + "; ".join(_short(c, 120) for c in self.constraints_list))
        return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# The provider
# ---------------------------------------------------------------------------------------------


def _last_state(request: ModelRequest) -> dict[str, Any] | None:
    for message in reversed(request.messages):
        if message.role == "user":
            return parse_state_block(message.text())
    return None


def _last_results(request: ModelRequest) -> list[tuple[ToolUseBlock, ToolResultBlock]]:
    """(tool_use, tool_result) pairs of the agent's previous turn, in call order."""
    msgs = request.messages
    if len(msgs) < 2 or msgs[-1].role != "user" or msgs[-2].role != "assistant":
        return []
    results = {r.tool_use_id: r for r in msgs[-1].tool_results()}
    return [(u, results[u.id]) for u in msgs[-2].tool_uses() if u.id in results]


class ScriptedProvider:
    """The offline default provider: a deterministic agent policy, not a model (see the module
    docstring). Usage comes from longrun's own token estimator; cache fields are 0."""

    def __init__(self) -> None:
        self.name: str = SCRIPTED
        self.info: ModelInfo = SCRIPTED_INFO

    def count_tokens(self, request: ModelRequest) -> int:
        return estimate_request(request)

    def complete(self, request: ModelRequest) -> ModelResponse:
        state = _last_state(request)
        if state is None:
            turn = Turn(
                f"The {AGENT_LABEL} found no <task_state> block in the last user message, so it has no "
                "objective to work on and stops.",
                final=True,
            )
            number = 1
        else:
            number = 1 + sum(1 for m in request.messages if m.role == "assistant")
            from longrun.providers.scripted_subagent import ChildPolicy
            from longrun.subagents import is_child_objective

            if is_child_objective(str(state.get("objective", ""))):
                turn = ChildPolicy(state, request.messages, number).decide()
            else:
                tools = frozenset(t.name for t in request.tools)
                turn = Policy(state, _last_results(request), number, tools).decide()
        digest = sha256_hex(canonical_json(request.model_dump(mode="json")))[:8]
        content: list[Block] = [TextBlock(text=turn.text)]
        content += [
            ToolUseBlock(id=f"toolu_s{number:04d}_{i}_{digest}", name=c.name, input=c.input)
            for i, c in enumerate(turn.calls)
        ]
        output = estimate_messages([Message(role="assistant", content=content)])
        return ModelResponse(
            content=content,
            stop_reason="tool_use" if turn.calls else "end_turn",
            usage=Usage(input_tokens=estimate_request(request), output_tokens=output),
            model=SCRIPTED,
        )


__all__ = ["Constraints", "Policy", "ScriptedProvider", "objective_terms", "find_test_command"]
