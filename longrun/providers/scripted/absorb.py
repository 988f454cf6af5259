"""How the parent policy takes in the results of its previous turn.

Each tool result becomes a note at once (this turn's `write_note`), since the result itself may be
compacted away later: a listing and the survey's candidates (`survey:`), a read file run through
the rule library (`inspected <file>: clean | <rule> at line <n>: ...`, plus a `record_decision`
for a new suspect, citing the rule and the line), a subagent's answer (`Delegation.absorb_task`),
the outcome of an edit (`edit applied:` / `edit not applied:`) or of the test command (`verify:`),
and any other failure (`tool error: <call signature>`, so the call is never repeated).
"""

from __future__ import annotations

import re
import shlex

from longrun.providers.scripted.delegation import MAX_DELEGATED_CANDIDATES, Delegation
from longrun.providers.scripted.knowledge import NOTE_LIMIT
from longrun.providers.scripted.rules import parse_numbered, scan
from longrun.providers.scripted.search import MAX_CANDIDATES, rank_candidates, terms_pattern
from longrun.providers.scripted.turns import Call, result_text, short

_EXIT_RE = re.compile(r"^exit code:\s*(-?\d+)", re.M)


class Absorb(Delegation):
    """The parent policy's reading of the last results into notes and decisions."""

    def absorb(self) -> None:
        tasks = [use for use, _ in self.last if use.name == "task"]
        for use, result in self.last:
            text = result_text(result)
            err = result.is_error
            name, args = use.name, use.input
            if name == "list_dir":
                entries = [e for e in text.splitlines() if e.strip()]
                shown = ", ".join(entries[:30]) + (", ..." if len(entries) > 30 else "")
                where = args.get("path", ".")
                self.note(f"survey: listed {where}: failed: {short(text)}" if err else f"survey: listed {where}: {shown}")
            elif name == "grep":
                pattern = str(args.get("pattern", ""))
                is_terms = pattern == terms_pattern(self.terms)
                label = "|".join(self.terms) if is_terms else "code files"
                if err:
                    self.note(f"survey: candidates for {label}: (none) grep failed: {short(text)}")
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
                self.absorb_task(f"{tasks.index(use) + 1}/{len(tasks)}", args, text, err)
            elif name == "apply_patch":
                path = str(args.get("path", ""))
                rule = self._finding_for(path)
                why = f" ({rule.rule} at line {rule.line})" if rule else ""
                if err:
                    self.note(f"edit not applied: {path}{why}: {short(text)}")
                else:
                    self.note(f"edit applied: {path}{why}: {short(text, 120)}")
            elif name == "run_command":
                cmd = shlex.join([str(a) for a in args.get("argv", [])])
                m = _EXIT_RE.search(text)
                if err or not m:
                    self.note(f"verify: `{cmd}` not run: {short(text)}")
                else:
                    code = int(m.group(1))
                    verdict = "tests pass" if code == 0 else "tests fail"
                    self.note(f"verify: `{cmd}` exit code {code} ({verdict})")
            elif err:
                self.note(f"tool error: {Call(name, dict(args)).signature}: {short(text)}")

    def _absorb_read(self, path: str, text: str, err: bool) -> None:
        if err:
            if path not in self.k.inspected:
                self.note(f"inspected {path}: unreadable: {short(text)}")
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
            + "; ".join(f"{f.rule} at line {f.line}: {f.description} (`{short(f.text, 100)}`)" for f in findings[:3])
        )
        first = findings[0]
        if path not in self.decided_paths:
            self.processing.append(
                Call(
                    "record_decision",
                    {
                        "summary": f"Suspect defect in {path} line {first.line}: {first.description}",
                        "reason": f"scripted rule {first.rule} fired on `{short(first.text, 120)}` "
                        f"after the survey for {', '.join(self.terms) or 'the code files'} led to {path}",
                    },
                )
            )
        self.fresh[path] = lines
