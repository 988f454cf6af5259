"""Supersession across rewording (issue 25, cause 5): "We are calling the project RIECI-121 now"
replaces "The project codename is DNSNU-172", and "moved the deadline to Friday" replaces "deadline
is Thursday", although neither pair shares a key, a subject name or a value.

A line's *topic* is its subject names and content words with the verbs that only say a value
changed dropped, synonym groups (`facts.SYNONYMS`, and the naming words) made one; a later line
with an equal topic and a value of the same kind replaces the latest earlier one. Equal, not
overlapping: a false supersession loses a fact ("Conference spending ceiling" and "Project spending
ceiling" stay two), a missed one only keeps an old line beside the new.

Tests: tests/test_context_atomic.py.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from longrun.context import facts, kinds
from longrun.context.facts import Unit

if TYPE_CHECKING:
    from longrun.context.ledger import Entry


_NAMING = frozenset(("name", "nam", "codename", "codenam", "call", "calle", "renam", "rename", "dub", "dubb", "known",
                     "refer", "titl", "title"))
"""Stems of the words that say what a thing is called ("codename", "we are calling it", "renamed
to"): one synonym group, so a rename in other words supersedes the old name."""
_MOVES = frozenset(("mov", "move", "chang", "set", "updat", "push", "pushe", "bump", "shift", "switch", "reschedul",
                    "slip", "slipp", "forward", "rotat", "rotate", "go", "goe", "went"))
"""Stems of verbs that only say a value changed ("moved the deadline to Friday"): not part of
what the line is about."""


def topic(u: Unit) -> tuple[frozenset[str], frozenset[str], frozenset[str]] | None:
    """(topic, value, value kinds) of a unit for supersession across rewording (issue 25, cause 5),
    or None: the topic is its subject names and content words with move verbs dropped and synonyms
    (`facts.SYNONYMS`, the naming group) made one; the value is what it holds, the weekdays and months it
    names, or, for a naming line only, the identifier it names ("The project codename is
    DNSNU-172" and "We are calling the project RIECI-121 now" share the topic {project, ~name})."""
    if "reworded" not in u.memo:
        u.memo["reworded"] = _reworded(u)
    return u.memo["reworded"]  # type: ignore[no-any-return]


def _reworded(u: Unit) -> tuple[frozenset[str], frozenset[str], frozenset[str]] | None:
    words = {w for w in u.words if w not in _MOVES}
    days = {w for w in words if w in kinds.DAYS}
    norm = {"~name" if w in _NAMING else facts.CANON.get(w, w) for w in words - days}
    names, held = facts.subjects(u), facts.held_values(u)
    if held or days:
        value, vkinds = held | days, frozenset(facts.value_kinds(held) | ({"date"} if days else set()))
    elif "~name" in norm and len(names) == 1:
        value, vkinds, names = names, frozenset({"name"}), frozenset()
    else:
        return None
    if not norm:
        return None
    return frozenset(norm | names), frozenset(value), vkinds


def replaces(u: Unit, by_topic: dict[frozenset[str], int], entries: Sequence[Entry | None]) -> int | None:
    """The latest earlier line with the same normalised topic (`topic`: move verbs
    dropped, synonyms and the naming words made one) and a value of the same kind, but another
    value: "moved the deadline to Friday" replaces "deadline is Thursday". Conservative: the topic
    must be equal, not merely overlap, so "Conference spending ceiling" and "Project spending
    ceiling" stay two facts."""
    mine = topic(u)
    if mine is None:
        return None
    i = by_topic.get(mine[0])
    e = entries[i] if i is not None else None
    if e is None or i is None or e.unit.where != u.where:
        return None
    theirs = topic(e.unit)
    if theirs is None or not (mine[2] & theirs[2]) or mine[1] <= theirs[1] or not facts.said_alike(u, e.unit):
        return None
    return i


UPDATE = re.compile(
    r"\b(?:now|new|newly|chang\w*|moved?|switch(?:ed)?|rotated|from now on|going forward|henceforth|no longer"
    r"|instead|updated?|revised|retired|replac\w*|previous(?:ly)?|formerly|rebased)\b",
    re.I,
)
"""A line that says of itself that it changes something ("now belongs to", "has changed to",
"rotated", "from now on"): it may replace an earlier line said in other words (`updates`)."""
_GROUP = {"value": "value", "status": "value", "rule": "rule", "preference": "preference", "decision": "decision"}
MIN_SHARE = 0.2
"""Of the earlier line's topic words, the share an update must say too (at least one)."""


def updates(u: Unit, entries: Sequence[Entry | None], near: dict[str, set[int]]) -> int | None:
    """The earlier line a self-declared update (`UPDATE`) replaces although it shares no key and no
    topic with it: "Support duty now belongs to Dyyq Vparr" replaces "Smyi Gzuug is handling support
    escalation this week". The earlier line must come from the same speaker, be of the same class
    (a rule replaces a rule, a preference a preference, a value or status a value or status), hold
    no value of another kind, share a subject with it when both have one, and share at least
    `MIN_SHARE` of its topic words (synonyms made one); the line whose shared words fewest other
    lines say wins (each shared word counts 1/the lines that say it), the latest on a tie. Without an update cue nothing is linked this way: two lines that merely look alike both
    stay."""
    if u.source not in ("user", "agent") or not UPDATE.search(u.text):
        return None
    mine = words_of(u)
    said = words_of(u, names=False)
    if not said:
        return None
    group = _GROUP.get(u.kind, "value")
    held, subjects = facts.held_values(u), facts.subjects(u)
    best: tuple[float, int] | None = None
    for i in sorted({i for w in mine for i in near.get(w, ())}):
        e = entries[i]
        if e is None or e.unit.source != u.source or _GROUP.get(e.unit.kind, "value") != group:
            continue
        theirs = words_of(e.unit)
        common = mine & theirs
        if not (common & said) or len(common) < MIN_SHARE * len(theirs):
            continue  # a word of its own must match, not only the name both are about
        old_held, old_subjects = facts.held_values(e.unit), facts.subjects(e.unit)
        if held and old_held and (not (_kinds_of(u) & _kinds_of(e.unit)) or held <= old_held):
            continue
        if held and not old_held and not _kinds_of(e.unit) and len(common & said) < 2:
            continue  # a new date or number does not replace a line that holds none on one shared word
        if subjects and old_subjects and not subjects & old_subjects:
            continue  # two lines about different things (T-14 and T-15, billing-svc and auth-svc)
        # a word many lines say (ceiling, week) tells less about which line this one updates than
        # one only this line says (trip): "New ceiling for trip costs" updates the trip expenses,
        # not the conference ceiling beside them
        score = sum(1 / len(near.get(w, ())) for w in common if near.get(w))
        if best is None or score >= best[0]:
            best = (score, i)
    return best[1] if best else None


def words_of(u: Unit, names: bool = True) -> frozenset[str]:
    """A unit's topic words for `updates`: content words and (`names`) the parts of its names, move
    and update verbs and days dropped, synonyms made one."""
    key = "update_words" if names else "update_said"
    if key not in u.memo:
        # the words of a name made of words (field-trip, access-code), not of one with digits (eu-north-5)
        parts = {p for n in u.names if names and not any(c.isdigit() for c in n)
                 for p in re.split(r"[-_ ]", n) if p.isalpha() and len(p) > 2}
        words = {facts._stem(p) for p in parts} | set(u.words)
        u.memo[key] = frozenset(
            "~name" if w in _NAMING else facts.CANON.get(w, w) for w in words
            if w not in _MOVES and w not in kinds.DAYS and not UPDATE.fullmatch(w))
    return u.memo[key]  # type: ignore[no-any-return]


def _kinds_of(u: Unit) -> set[str]:
    """The kinds of value a unit holds, a day or a month beside a number read as a date ("we now
    ship on June 6" and "the date is 2027-12-11" hold one kind of value)."""
    return facts.value_kinds(facts.held_values(u)) | ({"date"} if u.words & kinds.DAYS else set())
