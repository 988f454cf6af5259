"""The state of a work item, whatever words say it (issue 25: "work-item states" and "0 superseded
values presented as current").

A ticket has one state at a time. "JIRA-4412 status: In Progress" and, later, "JIRA-4412 moved to
Done" (or "| JIRA-4412 | Done |", "JIRA-4412 → Done") say two states of one thing; only the later is
current. Before this, neither line held a value (a state is words, not a number or an identifier),
so no rule linked them and both read as current. `reword.topic` gives such a line the topic
{item, "~state"} and its state as the value, so the later one replaces the earlier.

Conservative, as every supersession rule here: a false one loses a fact, a missed one only keeps
an old line beside the new. So a line is read only when it names exactly one thing, that thing
looks like a work item (`ITEM`: a key with a number, "PAY-88", "jira-4412"), it says exactly one
state of `STATES` (or moves from one to another, "In Progress → Done": the last), and it is not
history, a question or a negation ("was in progress", "is it done?", "not done yet").

Tests: tests/test_context_supersede.py.
"""

from __future__ import annotations

import re

from longrun.context import facts
from longrun.context.facts import Unit

ITEM = re.compile(r"[a-z][a-z0-9]*-(?:\d+|[a-z0-9]{2,8}(?:\.\d+)+)")
"""A work item's key as a unit's names hold it (lowercased): "PAY-88", "JIRA-4412", "T-14", and a
sub-task's "spotter-gqc.2" (a tracker's short id and its task number). The short id alone
("spotter-gqc") is not enough: it reads as "billing-svc" does, a thing's name."""

PRIORITY = re.compile(r"p[0-4]|sev[0-4]")
"""A tracker's priority or severity label beside the item ("PAY-88 (P1) is blocked", "[● P2]"): not
a second thing the line names."""

_STATE_WORDS = {
    "in progress": "in progress", "in-progress": "in progress", "wip": "in progress", "started": "in progress",
    "in review": "in review", "under review": "in review", "code review": "in review", "ready for review": "in review",
    "in qa": "in qa", "in testing": "in qa",
    "done": "done", "completed": "done", "complete": "done", "finished": "done",
    "blocked": "blocked", "on hold": "on hold", "paused": "on hold",
    "todo": "todo", "to do": "todo", "to-do": "todo", "backlog": "todo",
    "open": "open", "reopened": "open", "investigating": "in progress",
    "closed": "closed", "resolved": "closed", "fixed": "closed", "merged": "merged", "shipped": "shipped", "released": "shipped", "deployed": "shipped",
    "cancelled": "cancelled", "canceled": "cancelled", "won't fix": "cancelled", "wontfix": "cancelled",
}
STATES = re.compile(r"(?<![\w-])(?:" + "|".join(sorted((re.escape(w) for w in _STATE_WORDS), key=len, reverse=True))
                    + r")(?![\w-])", re.I)
"""The states a work item is in, each read as its canonical name (`_STATE_WORDS`)."""
_NOT_NOW = re.compile(r"\b(?:was|were|had been|has been|used to|previously|formerly|before|last week|yesterday|not|"
                      r"never|no longer|isn't|wasn't|aren't|until|unless|if|when|once|will|should|would|might|could|"
                      r"expect\w*|plan\w*|hope\w*)\b|n't\b|\?\s*$", re.I)
"""Words that make a line something other than the item's state now: its history, a plan, a
condition, a negation, a question."""
_MOVE = re.compile(r"→|->|=>|\bto\b", re.I)


def incidental(held: frozenset[str]) -> bool:
    """The values a state line may hold beside its state: a version or a date says where or when
    ("BUG-9 fixed in v2.3.1", "PAY-88 closed on 2026-03-02"); any other value is what the line
    states instead."""
    return facts.value_kinds(held) <= {"version", "date"}


def state_of(u: Unit) -> tuple[str, str] | None:
    """(item, canonical state) of a line that says the one work item it names is in one state now, or None."""
    if not incidental(facts.held_values(u)):
        return None
    names = [n for n in facts.subjects(u) if not PRIORITY.fullmatch(n)]
    if len(names) != 1:
        return None
    item = names[0]
    if not ITEM.fullmatch(item):
        return None
    text = u.text
    if _NOT_NOW.search(text):
        return None
    found = list(STATES.finditer(text))
    states = {_STATE_WORDS[m.group(0).lower()] for m in found}
    if not states:
        return None
    if len(states) > 1:
        last = found[-1]
        if not _MOVE.search(text, found[0].end(), last.start()):
            return None  # two states and no move between them: which one holds is not said
        return item, _STATE_WORDS[last.group(0).lower()]
    return item, states.pop()
