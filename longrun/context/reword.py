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
    if theirs is None or not (mine[2] & theirs[2]) or mine[1] <= theirs[1]:
        return None
    return i
