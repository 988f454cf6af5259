"""The parent policy: one decision per request, the review stage by stage.

The review (`complete_stage` advances survey -> investigate -> fix -> verify -> report -> done):
- survey: `list_dir .`, then `grep` the Python files for the objective's terms (every code file
  when no term matches); the best-matching non-test files become the candidates (`search`). With
  more than four of them and a `task` tool offered, subagents read them (`delegation`).
- investigate: `read_file` each candidate and run the rule library (`rules`) over it; a rule
  that fires is recorded with `write_note` and `record_decision` (the rule and line in the reason).
  The search stops at the first file where a rule fires.
- fix: `set_next_action edit`, re-read the file, then `apply_patch` (needs a human's approval).
  A constraint such as "do not modify tests/" or "read-only" is respected (`objective.Constraints`):
  the edit is skipped and the note says which constraint forbade it. A rejected, denied or expired
  edit is noted and the review moves on.
- verify: runs the test command, if the run has one (`objective.find_test_command`), under
  `next_action test`.
- report: `set_next_action stop`, `complete_stage`, then a final text report (stop_reason
  end_turn, no tool calls).

Each turn first takes in the last results (`absorb`), then asks the current stage for a plan;
the notes and decisions learned go out before (or with) the plan's own calls.

Safety: a call that already failed (recorded as `tool error:`) is never repeated; the agent stops
with its report instead. It also stops after `MAX_TURNS` visible turns.
"""

from __future__ import annotations

import shlex

from longrun.providers.scripted.absorb import Absorb
from longrun.providers.scripted.delegation import DELEGATE_ABOVE
from longrun.providers.scripted.rules import propose_patch
from longrun.providers.scripted.search import CODE_GLOB, FALLBACK_PATTERN, terms_pattern
from longrun.providers.scripted.turns import AGENT_LABEL, Call, Turn, short

MAX_TURNS = 80
MAX_CALLS_PER_TURN = 2


class Policy(Absorb):
    """The decision procedure for one request. Pure: the same request gives the same Turn."""

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
                    self.note(f'edit skipped: {f.path}: constraint "{short(rule or "", 200)}" forbids editing it')
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
                Call("complete_stage", {"summary": f"Fix stage: {short(self.k.edit, 300)}"}),
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
                self.note(f'verify: not run: constraint "{short(self.constraints.no_commands or "", 200)}" forbids commands')
            else:
                self.note("verify: not run: no test command given (a constraint `tests: <argv...>` names one)")
        assert self.k.verify is not None
        return Turn("Verification stage done.",
                    [Call("complete_stage", {"summary": f"Verification: {short(self.k.verify[len('verify: '):], 300)}"})])

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
        lines.append(f"Objective: {short(self.objective, 300)}")
        if k.candidates:
            lines.append(f"Files inspected: {', '.join(p for p in k.candidates if p in k.inspected) or 'none'}")
        for part, files, outcome in k.delegations:
            lines.append(f"Subagent task {part} ({short(files, 160)}): {short(outcome, 200)}")
        if k.findings:
            for f in k.findings[:5]:
                lines.append(f"Finding: {f.path} line {f.line}: {f.description} [rule {f.rule}]")
        else:
            lines.append("Finding: no rule of the scripted library fired.")
        lines.append(f"Edit: {k.edit[len('edit '):] if k.edit else 'none proposed'}")
        lines.append(f"Verification: {k.verify[len('verify: '):] if k.verify else 'not run'}")
        if self.constraints_list:
            lines.append("Constraints respected: " + "; ".join(short(c, 120) for c in self.constraints_list))
        return "\n".join(lines)
