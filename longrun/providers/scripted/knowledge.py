"""What the parent policy knows: its task state, parsed back from its notes, plus this turn's news.

Older tool output may have been compacted away, so everything the agent learns goes into the
state at once (`write_note`, `record_decision`), and every decision is recomputed from the state
block plus the last results. Notes it writes start with a keyword it parses back here
(`Knowledge.learn`): `survey:` (listed, candidates, no file mentions, delegated task),
`inspected`, `edit applied:` / `edit not applied:` / `edit skipped:`, `verify:`, `tool error:`.

`PolicyBase` is the parent policy's view of one request, which the stages (`absorb`,
`delegation`, `policy`) build on: the state's fields, the knowledge, and what this turn adds to
them (new notes, bookkeeping calls, files read afresh).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from longrun.models.blocks import ToolResultBlock, ToolUseBlock
from longrun.providers.scripted.objective import Constraints, find_test_command, objective_terms
from longrun.providers.scripted.rules import Finding
from longrun.providers.scripted.turns import Call

NOTE_LIMIT = 600


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


class PolicyBase:
    """The parent policy's view of one request: its state, what it knows, what this turn adds."""

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

    def note(self, text: str) -> None:
        """A note for this turn's `write_note`, learned at once so the stages see it."""
        text = text[:NOTE_LIMIT]
        self.new_notes.append(text)
        self.k.learn(text)

    def _finding_for(self, path: str) -> Finding | None:
        return next((f for f in self.k.findings if f.path == path), None)
