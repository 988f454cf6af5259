"""How `ledger.fold` finds the earlier line a new one replaces: the same key, a correction, a
restated value, the same fact said again in other words (split from ledger.py, which says what
the ledger holds and how it is selected; `reword.py` links topics and updates said in other words).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from longrun.context import facts
from longrun.context.facts import Unit

if TYPE_CHECKING:
    from longrun.context.ledger import Entry


def _differs(u: Unit, e: Entry | None) -> bool:
    """The unit states a value (or path) the entry did not."""
    return e is not None and bool(facts.held_values(u) - facts.held_values(e.unit))


def _same_key(u: Unit, by_key: dict[tuple[str, frozenset[str]], int], entries: list[Entry | None]) -> int | None:
    i = by_key.get(u.key)
    if i is None or entries[i] is None or not u.key[1]:
        return None
    return i


def _restates_value(u: Unit, entries: list[Entry | None], nearby: Sequence[int]) -> bool:
    """The unit repeats a value an earlier line about one of its names stated, beside a new
    value ("backoff 63s, previous 9m"): a correction without a cue word."""
    if not u.names:
        return False
    mine, held = facts.subjects(u), facts.held_values(u)
    if len(held) < 2:
        return False
    return any(e is not None and facts.subjects(e.unit) and facts.subjects(e.unit) <= mine
               and facts.held_values(e.unit) & held and (held - facts.held_values(e.unit))
               for e in (entries[i] for i in nearby))


def _same_subject(u: Unit, entries: list[Entry | None], nearby: Sequence[int]) -> int | None:
    """The latest earlier line about the same subjects (and source call) and the same attribute
    (`facts.attributes`, synonyms included, or neither has one) with a value of the same kind
    and another value: the same fact said again in other words, whose latest value wins."""
    subjects = facts.subjects(u)
    mine = facts.held_values(u)
    if not subjects or not mine:
        return None
    kinds = facts.value_kinds(mine)
    attrs = facts.attributes(u)
    for i in nearby:
        e = entries[i]
        if e is None:
            continue
        o = e.unit
        theirs = facts.held_values(o)
        if facts.subjects(o) != subjects or o.where != u.where or not theirs or theirs == mine:
            continue
        if not (kinds & facts.value_kinds(theirs)):
            continue
        other = facts.attributes(o)
        if (attrs or other) and not (attrs & other):
            continue
        return i
    return None


def _corrected(u: Unit, entries: list[Entry | None], nearby: Sequence[int]) -> list[int]:
    """The earlier entries a correction replaces, best match first: those that share a subject
    name or a value with it, and either hold a value it repeats (the old value: "not 8080",
    "was A") or say the same attribute (`facts.attributes`, synonyms included) with the same
    kind of value; whose value differs. A correction replaces every such line (two provisional
    values of one endpoint both go), not only the closest."""
    found: list[tuple[int, int]] = []
    attrs = facts.attributes(u)
    kinds = facts.value_kinds(facts.held_values(u))
    for i in nearby:
        e = entries[i]
        if e is None:
            continue
        o = e.unit
        if o.where != u.where and u.source != "tool" and o.source == "tool":
            continue
        names = len(facts.subjects(o) & facts.subjects(u))
        shared_values = facts.held_values(o) & facts.held_values(u)
        if not (names or shared_values):
            continue  # a correction names its subject or the value it replaces
        same_kind = bool(kinds & facts.value_kinds(facts.held_values(o))) or not (u.values or o.values)
        same_attr = attrs & facts.attributes(o)
        if not (shared_values or (same_attr and same_kind)):
            continue
        if not ((facts.held_values(u) - facts.held_values(o)) or (u.names - o.names)):
            continue  # says nothing new: not a correction of this line
        found.append((2 * names + len(same_attr) + 3 * len(shared_values), i))
    found.sort(key=lambda f: (-f[0], -f[1]))
    return [i for _, i in found]
