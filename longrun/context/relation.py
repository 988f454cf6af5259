"""Single-valued relations and the words they are said in (issue 25, "supersession across
rewording": a re-pointed subject marks its old end superseded).

A thing routes to one place at a time, reads from one primary store, is owned by one team; a line
that says so names the subject, a relation cue and the other end. The cue is read into one
*canonical relation* whatever its words, so "traffic for A is routed to B", "A routes to B" and
"| A | routes to | C |" are one relation of A, and "A uses B as its primary store", "A reads from
B" and "B backs A" another. `reword` makes the canonical relation and the subject a line's topic,
so a later line about the same relation of the same thing can replace an earlier one.

Which later line replaces: a record of the relation (a table row, a `KEY=` line) replaces its
prose; prose replaces prose only when it says of itself that it changes something ("A now routes
to C", "cutover done: A reads from C from now on", `reword.UPDATE`) and does not say it adds ("A
now also routes to C"): "A routes to C" after "A routes to B" may be a second route.

Relations a thing may have many of (depends on, calls, uses, consumes) are never read here.

Tests: tests/test_context_supersede.py.
"""

from __future__ import annotations

import re

from longrun.context import fastre
from longrun.context.facts import Unit

SINGLE = fastre.fold(re.compile(
    r"\b(?:routes? to|routed to|forwards? to|proxies to|points? (?:to|at)|runs? (?:in|on)|hosted (?:in|on)"
    r"|deployed (?:to|in|on)|scheduled on|lives? (?:in|on)|located (?:in|at)|owned by|maintained by|pinned to"
    r"|mounted (?:at|on)|stored (?:in|at)|reads? from|publishes to|emits to|backed by|served by|backs|hosts"
    r"|uses \S+ as (?:its|the) (?:primary|main) (?:store|database|db|datastore))\b",
    re.I,
))
"""Relations a thing has one of at a time (module docstring): "A routes to B" says A's route is B."""
_INVERSE = re.compile(r"backs|hosts", re.I)
"""Relation words whose subject follows them ("B backs A": A's store)."""
_CANONICAL = (
    ("route", re.compile(r"rout|forward|prox|points?\b", re.I)),
    ("store", re.compile(r"reads? from|backed by|backs|uses ", re.I)),
    ("owner", re.compile(r"owned|maintained", re.I)),
    ("publish", re.compile(r"publishes|emits", re.I)),
)
"""Cues that say one relation in other words. A cue in none of these is its own relation ("runs
in" a region and "scheduled on" a cluster are two relations a service has one each of)."""
_WORDS = re.compile(r"[a-z]+")
_ADDS = fastre.fold(re.compile(r"\b(?:also|too|as well|additionally|in addition|another|both)\b", re.I))
"""A line that says it adds an end ("A now also routes to C"): it replaces no earlier end."""
FILLER = frozenset(("traffic", "request", "primary", "main", "store", "use", "its"))
"""Words a relation line says around the relation ("traffic for A is routed to", "as its primary
store"): not part of what it is about."""


def lead_words(u: Unit, subject: str) -> set[str]:
    """The words of a label the line opens with before its subject ("cutover done: A reads from
    C", "update: A now routes to C"): they say why the line was written, not which relation of A it
    is about, as "staging" in "staging traffic for A" does."""
    low = u.text.lower()
    colon, at = low.find(":"), low.find(subject)
    if colon < 0 or at < 0 or colon > at:
        return set()
    lead = set(_WORDS.findall(low[:colon]))
    return lead if lead <= _ANNOUNCING else set()  # "staging: A routes to C" is about staging


_ANNOUNCING = frozenset((
    "cutover", "done", "update", "updated", "fyi", "note", "heads", "up", "migration", "finished", "complete",
    "completed", "switched", "switch", "changed", "change", "status", "btw", "rollout", "shipped", "the", "a", "is",
    "has", "been", "now", "just", "ok", "so", "and", "correction", "final", "live",
))
"""The words of a lead-in label that only announce the line ("cutover done:", "migration
finished:", "update:"); a label with any other word ("staging:", "eu traffic:") qualifies it."""


def cue(u: Unit) -> re.Match[str] | None:
    return SINGLE.search(u.text)


def canonical(found: re.Match[str]) -> str:
    """The canonical relation of a cue: "~rel:route" for "is routed to" and "routes to"."""
    said = found.group(0)
    for name, pattern in _CANONICAL:
        if pattern.match(said):
            return "~rel:" + name
    return "~rel:" + "-".join(_WORDS.findall(said.lower()))


def cue_words(found: re.Match[str]) -> set[str]:
    """The words of a cue, lowercased (the line's own stems of them are dropped from its topic)."""
    return set(_WORDS.findall(found.group(0).lower()))


def subject_and_target(u: Unit, names: frozenset[str], found: re.Match[str] | None) -> tuple[str, str] | None:
    """(subject, target) of a line that names two things: the first named is the subject (in a
    naming line, `found` None, "We are calling X NEW-2 now"; and in a relation, "A routes to B"),
    the second after an inverse relation word ("B backs A"). A relation's cue must stand between the
    two names; a bare arrow says no relation ("A -> B" may be one of A's many dependencies): None."""
    low = u.text.lower()
    first, second = sorted(names, key=lambda n: (low.find(n), n))
    if low.find(first) < 0 or low.find(second) < 0:
        return None
    if found is not None:
        if not (low.find(first) < found.start() <= low.find(second)):
            return None
        if _INVERSE.fullmatch(found.group(0)):
            first, second = second, first
    return first, second


def relation_and_subject(u: Unit, names: frozenset[str]) -> tuple[str, str] | None:
    """(canonical relation, subject) of a line that states a single-valued relation with a named
    end on each side of its cue (or inside it: "A uses B as its primary store"), or None: the name
    nearest before the cue ("traffic for A is routed to B", "A routes to C instead of B"), or after
    an inverse cue ("B backs A"). Agrees with `subject_and_target` on which name is the subject."""
    found = cue(u)
    if found is None or len(names) < 2:
        return None
    low = u.text.lower()
    at = {n: low.find(n) for n in names}
    before = [n for n in names if 0 <= at[n] < found.start()]
    after = [n for n in names if at[n] > found.start()]  # the end may stand inside the cue ("uses B as its ...")
    if not before or not after:
        return None
    if _INVERSE.fullmatch(found.group(0)):
        return canonical(found), min(after, key=lambda n: (at[n], n))
    return canonical(found), max(before, key=lambda n: (at[n], n))


def adds(u: Unit) -> bool:
    """The line says it adds an end of a relation rather than changing it (`_ADDS`)."""
    return fastre.found(_ADDS, u.text)


def repoints(u: Unit, update: bool) -> bool:
    """Whether a prose relation line replaces the earlier end of the same relation (module
    docstring): said by the user or the agent, as a change (`update`, `reword.UPDATE`), not as an
    addition."""
    return update and u.source in ("user", "agent") and not adds(u)
