"""The refactor policy: rename an identifier across a package, one approved edit per file.

Chosen by the provider when the objective asks for a rename in so many words ("Rename `old` to
`new` across the package", `rename.Rename.parse`); any other objective gets the forensic review
(`policy`). Like that one it is a Python policy, not a model, and pure: each decision is
recomputed from the task-state block and the last tool results alone (older output may have been
compacted away), and what it learns goes into notes at once (`rename.RenameKnowledge`).

The stages (`complete_stage` advances them):
- survey: `grep` the Python files for the old name as a whole word (and for the module to move,
  when the objective also says "move the module `a.b` to `a.c.d`"); the files and their counts
  become one note. With a move, `glob` finds the module's file (exactly one, or no move).
- investigate: nothing to investigate in a rename; the stage closes with the plan (files to edit,
  one apply_patch each) and reads the first file.
- fix: with a move, `move_path` first (its approval, or a scope covering both paths); a rejected
  move is noted and no import is rewritten. Then for each file, in path order (the moved module
  at its new place): `set_next_action edit` (once, when the state is not already editing),
  `read_file` it, then one `apply_patch` replacing every occurrence (`rename.plan_patch`), the
  old module's dotted name too once it moved. In a git change set each edit's result names its
  commit, which goes into the file's note; the report lists the branch and every commit.
  The next file is read in the same turn as this one is patched, so a file costs one turn. Each
  edit needs a human's approval or a standing approval (a scope: `longrun grant ... --tool
  apply_patch --paths 'src/**'`), which is what makes a refactor of many files practical. A file a
  constraint forbids ("do not modify tests/") is skipped and the note names the constraint; a
  rejected, denied or expired edit is noted and the refactor moves on; nothing is retried.
- verify: `grep` again (what is left, and where: a skipped file, or a failed one), then the test
  command the run was told about (`tests: <argv...>`, `objective.find_test_command`) under
  `next_action test`.
- report: `complete_stage`, then a final text report listing the files changed.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from longrun.models.blocks import ToolResultBlock, ToolUseBlock
from longrun.providers.scripted.objective import Constraints, find_test_command
from longrun.providers.scripted.rename import (
    MAX_LISTED_FILES,
    NoPatch,
    Rename,
    RenameKnowledge,
    committed,
    grep_counts,
    listing,
    plan_patch,
)
from longrun.providers.scripted.search import CODE_GLOB
from longrun.providers.scripted.turns import AGENT_LABEL, Call, Turn, result_text, short

MAX_TURNS = 3 * MAX_LISTED_FILES + 20
_EXIT_RE = re.compile(r"^exit code:\s*(-?\d+)", re.M)  # run_command's first line


class RefactorPolicy:
    """The decision procedure for one request of a rename run. Pure: the same request gives the
    same Turn."""

    def __init__(
        self, state: dict[str, Any], last: list[tuple[ToolUseBlock, ToolResultBlock]], turn: int, rename: Rename
    ) -> None:
        self.rename = rename
        self.last = last
        self.turn = turn
        self.objective = str(state.get("objective", ""))
        self.constraints_list = [str(c) for c in state.get("constraints") or []]
        self.constraints = Constraints.parse(self.constraints_list)
        self.step = str(state.get("current_step", "survey"))
        self.next_action = str(state.get("next_action", "inspect"))
        self.test_argv = find_test_command(self.objective, self.constraints_list)
        self.k = RenameKnowledge()
        for note in state.get("notes") or []:
            self.k.learn(str(note))
        self.new_notes: list[str] = []
        self.fresh: dict[str, str] = {}  # path -> read_file output of the last turn

    def note(self, text: str) -> None:
        """A note for this turn (one `write_note` each), learned at once so the stages see it."""
        self.new_notes.append(text)
        self.k.learn(text)

    def decide(self) -> Turn:
        self.absorb()
        if self.step == "done":
            return Turn(self.report(), final=True)
        if self.turn > MAX_TURNS:
            return Turn(self.report(f"Stopping after {MAX_TURNS} turns."), final=True)
        handler = {"survey": self.survey, "investigate": self.investigate, "fix": self.fix,
                   "verify": self.verify, "report": self.report_stage}.get(self.step)
        plan = handler() if handler else Turn(f"Unknown step {self.step!r}; reporting.", final=True)
        blocked = next((c for c in plan.calls if any(e.startswith(f"tool error: {c.signature}") for e in self.k.errors)), None)
        if blocked is not None:
            plan = Turn(f"`{blocked.name}` was refused before; not repeating it.", final=True)
        notes = [Call("write_note", {"text": n}) for n in self.new_notes]
        if plan.final:
            if notes:  # record what was learned first; the report comes next turn
                return Turn("Recording what the last tool results showed.", notes)
            plan.text = self.report(plan.text)
        return Turn(plan.text, notes + plan.calls, plan.final)

    # --- taking in the last results ---------------------------------------------------------

    def absorb(self) -> None:
        for use, result in self.last:
            text, err, args = result_text(result), result.is_error, use.input
            path = str(args.get("path", ""))
            if use.name == "grep":
                self._absorb_grep(text, err)
            elif use.name == "read_file":
                if err:
                    self.note(f"rename failed: {path}: could not read it: {short(text)}")
                else:
                    self.fresh[path] = text
            elif use.name == "glob":
                self._absorb_glob(text, err)
            elif use.name == "move_path":
                where = f"{path} -> {args.get('to', '')}"
                if err:
                    self.note(f"move failed: {where}: {short(text, 240)}")
                else:
                    self.note(f"move done: {where}{self._commit_of(text)}")
            elif use.name == "apply_patch":
                if err:
                    self.note(f"rename failed: {path}: {short(text, 240)}")
                else:
                    old = str(args.get("old", ""))
                    n = sum(len(w.findall(old)) for w, _ in self.rename.substitutions(self.k.moved))
                    commit = self._commit_of(text)
                    self.note(f"rename done: {path}: {n} occurrence(s)" + (commit or f", {short(text, 120)}"))
            elif use.name == "run_command":
                cmd = shlex.join([str(a) for a in args.get("argv", [])])
                m = _EXIT_RE.search(text)
                if err or not m:
                    self.note(f"verify: `{cmd}` not run: {short(text)}")
                else:
                    code = int(m.group(1))
                    self.note(f"verify: `{cmd}` exit code {code} ({'tests pass' if code == 0 else 'tests fail'})")
            elif err:
                self.note(f"tool error: {Call(use.name, dict(args)).signature}: {short(text)}")

    def _commit_of(self, text: str) -> str:
        """', commit <id>' when the edit became a commit of the run's change set (its branch is
        noted once), else ''."""
        found = committed(text)
        if found is None:
            return ""
        sha, branch = found
        if self.k.branch is None:
            self.note(f"change set: branch {branch}")
        return f", commit {sha}"

    def _absorb_glob(self, text: str, err: bool) -> None:
        """The survey's glob for the module to move: exactly one file, or the move is not done."""
        move = self.rename.move
        if move is None or self.k.move_planned is not None or self.k.move_problem is not None:
            return
        rows = [line.strip().split(None, 1) for line in text.splitlines() if not err and not line.startswith("[")]
        paths = [row[1] for row in rows if len(row) == 2]  # glob's "<size>  <path>"
        sources = [p for p in paths if move.destination(p) is not None]
        if len(sources) != 1:
            why = "glob failed: " + short(text) if err else f"{len(sources)} files match {move.glob}"
            self.note(f"move survey: none: {why}")
            return
        source = sources[0]
        dest = move.destination(source)
        rule = self.constraints.forbids_edit(source) or (self.constraints.forbids_edit(dest) if dest else None)
        if rule:
            self.note(f'move survey: none: constraint "{short(rule, 200)}" forbids moving {source}')
        else:
            self.note(f"move survey: {source} -> {dest}")

    def _absorb_grep(self, text: str, err: bool) -> None:
        """The first grep is the survey, the second the check (the survey's note tells them apart)."""
        old = self.rename.old
        counts = grep_counts(text) if not err else {}
        if self.k.found is None:
            if err:
                self.note(f"rename survey: grep failed: {short(text)}")
            elif not counts:
                self.note(f"rename survey: no Python file names `{old}`")
            else:
                listed = dict(list(counts.items())[:MAX_LISTED_FILES])
                more = f" (the first {len(listed)} listed)" if len(listed) < len(counts) else ""
                self.note(f"rename survey: `{old}` in {len(counts)} file(s){more}: {listing(listed)}")
        elif err:
            self.note(f"rename check: grep failed: {short(text)}")
        else:
            kept = {p: n for p, n in counts.items() if p in self.k.skipped}
            left = {p: n for p, n in counts.items() if p not in self.k.skipped}
            found = f"`{old}` still in: {short(listing(left), 400)}" if left else f"no `{old}` left"
            where = f"; in skipped file(s) only: {short(listing(kept), 300)}" if kept and not left else ""
            self.note(f"rename check: {found}{where}")

    # --- the stages -------------------------------------------------------------------------

    def survey(self) -> Turn:
        if self.k.found is None:
            return Turn(f"Searching the Python files for `{self.rename.old}` as a whole word.",
                        [Call("grep", {"pattern": self.rename.grep_pattern, "path": ".", "glob": CODE_GLOB})])
        move = self.rename.move
        if move is not None and self.k.move_planned is None and self.k.move_problem is None:
            return Turn(f"Finding the file of the module `{move.old}` to move.",
                        [Call("glob", {"pattern": move.glob})])
        summary = (f"`{self.rename.old}` is named in {len(self.k.found)} file(s)" if self.k.found
                   else f"nothing to rename: {self.k.survey_problem or 'no file names it'}")
        if self.k.move_planned is not None:
            summary += f"; the module file {self.k.move_planned[0]} moves to {self.k.move_planned[1]}"
        return Turn(f"Survey done: {summary}.", [Call("complete_stage", {"summary": f"Survey: {summary}"})])

    def investigate(self) -> Turn:
        todo = self._editable()
        summary = (f"Plan: rename `{self.rename.old}` to `{self.rename.new}` in {len(todo)} file(s), "
                   "one apply_patch per file, each read first" if todo else "Plan: nothing to rename")
        summary += f"; {len(self.k.skipped)} skipped (a constraint forbids editing them)" if self.k.skipped else ""
        if self.k.move_planned is not None:
            summary = f"Plan: move_path {self.k.move_planned[0]} -> {self.k.move_planned[1]} first; " + \
                summary.removeprefix("Plan: ")
        calls = [Call("complete_stage", {"summary": summary})]
        if todo and not self._move_pending():
            calls.append(Call("read_file", {"path": todo[0]}))
        return Turn(summary + ".", calls)

    def _move_pending(self) -> bool:
        return self.k.move_planned is not None and not self.k.moved and self.k.move_problem is None

    def fix(self) -> Turn:
        calls: list[Call] = []
        if self.next_action != "edit" and (self._next_target() is not None or self._move_pending()):
            calls.append(Call("set_next_action", {"next_action": "edit"}))
        if self._move_pending():
            assert self.k.move_planned is not None
            source, dest = self.k.move_planned
            calls.append(Call("move_path", {"path": source, "to": dest}))
            return Turn(f"Moving the module file {source} to {dest} first; the imports follow file by file. This "
                        "needs a human's approval or a standing approval (scope) covering both paths.", calls)
        while (found := self._next_target()) is not None:
            target = self.k.where(found)
            if target not in self.fresh:
                return Turn(f"Reading {target} before renaming in it.", [*calls, Call("read_file", {"path": target})])
            patch = plan_patch(target, self.fresh[target], self.rename, module_moved=self.k.moved)
            if isinstance(patch, NoPatch):
                self.note(f"rename {'skipped' if patch.nothing_to_do else 'failed'}: {target}: {patch.reason}")
                continue
            calls.append(Call("apply_patch", {"path": patch.path, "old": patch.old, "new": patch.new}))
            following = self._next_target(after=found)
            if following is not None:
                calls.append(Call("read_file", {"path": self.k.where(following)}))
            return Turn(
                f"Renaming {patch.occurrences} occurrence(s) of `{self.rename.old}` in {target} (from line "
                f"{patch.first_line}). This edit needs a human's approval or a standing approval (scope).",
                calls,
            )
        done = len(self.k.done)
        summary = f"Fix: renamed in {done} of {len(self.k.found or {})} file(s)"
        summary += f"; {len(self.k.skipped)} skipped" if self.k.skipped else ""
        summary += f"; {len(self.k.failed)} failed: {', '.join(self.k.failed)}" if self.k.failed else ""
        return Turn(summary + ".", [Call("complete_stage", {"summary": short(summary, 600)})])

    def _editable(self) -> list[str]:
        """The files left to edit, in path order; a file a constraint forbids is noted (once) as
        skipped. Recomputed every turn, so a constraint that arrives mid-run is respected too."""
        for path in self.k.todo():
            if rule := self.constraints.forbids_edit(path):
                self.note(f'rename skipped: {path}: constraint "{short(rule, 200)}" forbids editing it')
        return self.k.todo()

    def _next_target(self, after: str | None = None) -> str | None:
        todo = self._editable()
        if after is not None and after in todo:
            todo = todo[todo.index(after) + 1:]
        return todo[0] if todo else None

    def verify(self) -> Turn:
        if self.k.check is None:
            return Turn(f"Checking what still names `{self.rename.old}`.",
                        [Call("grep", {"pattern": self.rename.grep_pattern, "path": ".", "glob": CODE_GLOB})])
        if self.k.verify is None:
            if self.test_argv and not self.constraints.no_commands:
                calls = [] if self.next_action == "test" else [Call("set_next_action", {"next_action": "test"})]
                return Turn(f"Running the tests: {shlex.join(self.test_argv)}.",
                            [*calls, Call("run_command", {"argv": list(self.test_argv)})])
            if self.test_argv:
                self.note(f'verify: not run: constraint "{short(self.constraints.no_commands or "", 200)}" forbids commands')
            else:
                self.note("verify: not run: no test command given (a constraint `tests: <argv...>` names one)")
        summary = f"Verification: {self.k.check}; tests: {self.k.verify}"
        return Turn("Verification stage done.", [Call("complete_stage", {"summary": short(summary, 600)})])

    def report_stage(self) -> Turn:
        return Turn(self.report(), [Call("complete_stage", {"summary": "Report written; refactor finished"})])

    def report(self, lead: str = "") -> str:
        k, old, new = self.k, self.rename.old, self.rename.new
        lines = [f"Refactor report by the {AGENT_LABEL}." + (f" {lead}" if lead else "")]
        lines.append(f"Objective: {short(self.objective, 300)}")
        if k.found is None:
            lines.append(f"Survey: not done; `{old}` was not searched for.")
        elif not k.found:
            lines.append(f"Survey: {k.survey_problem or f'no Python file names `{old}`'}.")
        else:
            lines.append(f"Survey: `{old}` named in {len(k.found)} file(s).")
        changed = [f"{p} ({k.count_of(v)})" for p, v in k.done.items() if k.count_of(v)]
        lines.append(f"Files changed, `{old}` -> `{new}` ({len(changed)}): {', '.join(changed) or 'none'}")
        move = self.rename.move
        if move is not None:
            if k.moved and k.move_planned is not None:
                lines.append(f"Moved: `{move.old}` -> `{move.new}` ({k.move_planned[0]} -> {k.move_planned[1]})")
            else:
                lines.append(f"Not moved: `{move.old}`: {k.move_problem or 'not done'}")
        lines += [f"Skipped: {p}: {why}" for p, why in k.skipped.items()]
        lines += [f"Not changed: {p}: {why}" for p, why in k.failed.items()]
        if k.branch is not None:
            shown = ", ".join(f"{sha[:12]} ({what})" for sha, what in k.commits)
            lines.append(f"Change set: branch {k.branch}, {len(k.commits)} commit(s): {shown or 'none'}; "
                         "`longrun diff RUN` shows it")
        lines.append(f"Check: {k.check or 'not run'}")
        lines.append(f"Verification: {k.verify or 'not run'}")
        if self.constraints_list:
            lines.append("Constraints respected: " + "; ".join(short(c, 120) for c in self.constraints_list))
        return "\n".join(lines)
