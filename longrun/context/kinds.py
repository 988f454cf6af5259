"""Fact kinds and their priority classes: what a line is (a rule, a decision, a value, a status, a
preference), read from its words, and the type label that may lead it.

Why kinds: a budget ranked by concrete tokens alone lets "the dashboard shows p50 and p95 side by
side" beat "Never reveal API keys or passwords, even if asked" (issue 25, cause 3). A rule with no
value is worth more to a run than any number it was told in passing, so the selection takes whole
classes in order (`PRIORITY`) and only ranks by information per token inside a class.

Why labels are stripped: "HARD CONSTRAINT: Conference spending ceiling is $350" is about the
conference ceiling, not about "HARD CONSTRAINT"; read as names, the label made every constrained
line share a subject, and the newest replaced the others. The label still decides the kind, and
the line is still quoted verbatim.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Literal

from longrun.context import fastre

Kind = Literal["rule", "decision", "value", "status", "preference"]

PRIORITY: dict[str, int] = {"rule": 0, "decision": 1, "value": 2, "status": 3, "preference": 4}
"""Selection order under the budget (issue 25): rules and prohibitions, decisions, current values
and relations, statuses, preferences."""

_TITLE_LABELS = (
    "critical", "important", "note", "notes", "reminder", "update", "quick update", "heads up", "fyi", "warning",
    "rule", "rules", "constraint", "constraints", "hard constraint", "safety rule", "red line", "preference",
    "user preference", "fact", "decision", "status", "goal", "goal state", "policy", "requirement", "remember",
    "correction", "new constraint", "key fact", "context",
)
LABEL = re.compile(
    r"^\s*(?:[-*]\s+)?(?:\*\*)?(?:(?P<caps>[A-Z]{2,}(?:[ /&][A-Z]{2,}){0,3})"
    r"|(?P<title>(?i:" + "|".join(re.escape(t) for t in sorted(_TITLE_LABELS, key=len, reverse=True)) + r")))"
    r"(?:\*\*)?\s*:(?:\*\*)?\s+(?=\S)"
)
"""A type label leading a line: an ALL-CAPS label of words ("SAFETY RULE:", "FACT:", "GOAL
STATE:") or a known Title one ("Critical:", "Quick update:", "Note:"), before the text it labels.
Title labels are a closed list: "Owner: @alice" or "Port: 8443" is a key and its value, not a
label; an identifier ("FACT-13-DDMJ3F:", "T-14:", "BILLING_PORT:") is the subject, not a label."""

_LABEL_KIND = {
    "rule": ("safety rule", "hard constraint", "constraint", "rule", "red line", "policy", "requirement", "critical",
             "important", "warning", "security", "safety", "must", "never", "always", "mandatory", "required"),
    "decision": ("decision", "decided", "locked", "adr", "chosen"),
    "status": ("goal state", "status", "goal", "progress", "todo", "next step", "current task", "state"),
    "preference": ("user preference", "preference", "style"),
}

RULE = re.compile(
    r"\b(?:never|always|must(?:n't| not)?|do not|don't|does not|doesn't|cannot|can't|may not|shall not|should never"
    r"|is not allowed|are not allowed|not allowed|forbidden|prohibited|banned|required|requires? approval|mandatory"
    r"|hard constraint|red line|safety rule|under no circumstances|only ever|no (?:external|network|outbound|direct)"
    r"|(?:stay|keep|remain)s? (?:\w+ ){0,4}(?:under|below|within|at or below|at most|above)|at or below|no more than"
    r"|not (?:exceed|go over|go above)|do not exceed|ceiling|budget cap|spending (?:cap|limit|ceiling)"
    r"|(?:make sure|ensure|only use|only python|only \w+ \d)"
    r"|from now on|going forward|henceforth|until further notice|from here on)\b",
    re.I,
)
"""A rule or a prohibition, wherever it stands in the line ("Absolutely never ...", "The code ...
must never be shared", "Keep spend under $300"), or a standing instruction ("From now on, report
times in UTC": it holds until another replaces it)."""
DECISION = re.compile(
    r"\b(?:decided|decision|we(?: will|'ll) (?:go with|use|ship|adopt|take)|going with|went with|chosen|we chose"
    r"|settled on|locked(?: in)?|agreed (?:on|to)|final call|approved plan|adopt(?:ed)?)\b",
    re.I,
)
REJECTED = re.compile(
    r"\b(?:rejected|ruled out|not going with|won't (?:use|go with|ship)|abandon(?:ed)?|scrapp(?:ed)?|discarded"
    r"|dropped the (?:plan|idea|option)|decided against|vetoed)\b",
    re.I,
)
"""A decision that rejects an alternative: the store keeps it marked rejected."""
MOVED_OFF = r"(?:migrat|mov)\w* (?:off|away from)|stop(?:ped|ping)? using"
"""Moving off a practice ("migrating off MySQL", "we stopped using Helm"): an override's cue, and
one that names the option it drops (`reword`)."""
OVERRIDE = fastre.fold(re.compile(
    r"\b(?:not (?:doing|going with|going to (?:do|use)|using|use)|won't (?:do|use|go with)|reject\w*|ruled out"
    r"|revert\w*|roll(?:ed|ing|s)? back|back(?:ed|ing)? out|drop(?:ped|ping|s)?|(?:is|are) out|change of plan"
    r"|scrap(?:ped|ping|s)?|scratch|abandon\w*|no longer|instead|replac\w+|switch\w* (?:from|to|away)|cancel\w*"
    r"|did(?: not|n't) (?:work|hold up|scale|pan out)|supersed\w*|overrid\w*|vetoed|decided against"
    r"|" + MOVED_OFF + r")\b",
    re.I,
))
"""A line that overrides a choice: rejects, reverts, drops or replaces a plan or a decision, or
moves off a practice ("migrating off MySQL", "we stopped using Helm")."""
CHOICE = fastre.fold(re.compile(
    r"\b(?:plan(?:ned|s)?|pick(?:ed)?|cho(?:se|sen|ose)|go(?:ing)? with|went with|let's|opt(?:ed)? for|leaning"
    r"|settled|agreed|decided|decision|use \S+ (?:as|for)|gets)\b|\bit is\b",
    re.I,
))
"""A line that makes a choice ("Plan for X: use A", "We picked A", "Let's go with A", "X gets A"):
what an override replaces."""
PRACTICE = fastre.fold(re.compile(
    r"\bwe(?:'re| are)? (?:use|using|deploy(?:ing)? (?:with|via|using)|run(?:ning)? on|host(?:ing)? on"
    r"|build(?:ing)? with|standardi[sz]ed on)\b"
    r"|\b(?:uses|is using|are using|runs on|is built with|is written in)\b",  # "Auth uses JWT"
    re.I,
))
"""A practice the team follows ("We deploy with Helm", "We use MySQL", "we're running on ECS"): a
choice made before, replaced by an override that names it ("migrating off MySQL") or shares two
words with it, not one ("We dropped the flaky test" is not about "We use pytest for the tests")."""

PREFERENCE = re.compile(
    r"\b(?:prefers?|preferred|preference|i(?:'d| would) rather|would rather|i like|likes|i want|wants|rather than"
    r"|style|tone|terse|verbose|concise|format(?:ted)? (?:as|in)|(?:use|stick to|in) (?:\w+ )?(?:metric|imperial) )",
    re.I,
)
STATUS_CUE = re.compile(
    r"\b(?:current task|next step|steps? \d|in progress|blocked|done|completed?|finished|pending|awaiting|open question"
    r"|currently|working on|parked on|status|failing|fails on|passing|merged|shipped)\b",
    re.I,
)


DAYS = frozenset(("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "january",
                  "february", "march", "april", "june", "july", "august", "september", "october", "november",
                  "december"))
"""Weekdays and months: values ("the deadline is Thursday"), not what a line is about."""


def strip_label(text: str) -> tuple[str, str]:
    """(the label, lowercase, or ""; the text without it). Only the first label goes."""
    m = LABEL.match(text)
    if not m:
        return "", text
    label = (m.group("caps") or m.group("title") or "").lower()
    return label, text[m.end():]


def classify(text: str, *, relation: bool = False, status: bool = False, label: str | None = None) -> Kind:
    """The kind of a line: its label's when it has a typed one, else its words' (a rule cue anywhere
    wins over a decision, a decision over a preference, a preference over a status, the rest are
    values and relations)."""
    lab, body = strip_label(text) if label is None else (label, text)
    kind = _label_kind(lab) if lab else None
    if kind is not None:
        if kind == "preference" and fastre.found(RULE, body) and not fastre.found(PREFERENCE, body):
            return "rule"
        return kind
    if fastre.found(RULE, body):
        return "rule"
    if fastre.found(DECISION, body) or fastre.found(REJECTED, body):
        return "decision"
    if fastre.found(PREFERENCE, body):
        return "preference"
    if status or fastre.found(STATUS_CUE, body):
        return "status"
    return "value"


@lru_cache(maxsize=4_096)
def _label_kind(label: str) -> Kind | None:
    """The kind a type label gives (the first of `_LABEL_KIND` one of whose words is the label, or
    its first or last word), or None. Cached: a transcript's labels are few, and matching each
    against every word was a tenth of a line's cold analysis on the kit's labelled lines (issue 25)."""
    for kind, words in _LABEL_KIND.items():
        if any(label == w or label.endswith(" " + w) or label.startswith(w + " ") for w in words):
            return kind  # type: ignore[return-value]
    return None


def rejects(text: str) -> bool:
    """The line rejects an alternative ("we rejected plan A", "ruled out Redis")."""
    return fastre.found(REJECTED, text)


def typed(text: str) -> bool:
    """The line is led by an ALL-CAPS type label ("FACT:", "GOAL STATE:")."""
    m = LABEL.match(text)
    return bool(m and m.group("caps"))


def priority(kind: str) -> int:
    return PRIORITY.get(kind, PRIORITY["value"])


def rank(kind: str, typed_line: bool) -> tuple[int, int]:
    """Where a fact stands in the selection: rules first; then the lines their author typed as
    records ("FACT:", "GOAL STATE:"), by class; then the others, by class."""
    if kind == "rule":
        return (0, 0)
    return (1 if typed_line else 2, min(priority(kind), PRIORITY["value"]) if kind == "status" else priority(kind))


# Searched as `fastre.Folded` (the same answers; CPython's re is 3-4 times slower on these under
# IGNORECASE), which extraction at compaction does for every line of the transcript (issue 25).
RULE, DECISION, REJECTED, PREFERENCE, STATUS_CUE = (fastre.fold(p) for p in (RULE, DECISION, REJECTED, PREFERENCE, STATUS_CUE))
