"""The kinds of value a fact states (hash, address, date, ip, path, version, a quantity by its unit
(percent, duration, size, rate, or quantity), number,
other): a later line about the same subject with a value of the same kind replaces it.

Split from `facts.py` by job (its size, issue 25); `facts.value_kinds` re-exports it.
"""

from __future__ import annotations

import re
from functools import lru_cache

_KINDS = (
    ("hash", re.compile(r"^(?=[0-9a-f]*\d)[0-9a-f]{7,64}$", re.I)),
    ("address", re.compile(r"^(?:[a-z][a-z0-9+.-]*://|[\w.+-]+@|@)", re.I)),
    ("date", re.compile(r"^\d{4}-\d{2}-\d{2}|^\d{1,2}(?:st|nd|rd|th)$", re.I)),
    ("ip", re.compile(r"^\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?$")),
    ("path", re.compile(r"/")),
    ("version", re.compile(r"^v?\d+(?:\.\d+){1,3}(?:[-+][\w.]+)?$")),
    ("quantity", re.compile(r"^\d+(?:[.,]\d+)?\s?°?[a-z%]+$", re.I)),
    ("number", re.compile(r"^\d{1,3}(?:,\d{3})+(?:\.\d+)?$|^\d+(?:[.,]\d+)?$")),
)


def value_kinds(values: frozenset[str]) -> set[str]:
    """What kinds of value a unit states (hash, address, date, version, quantity, number,
    other): a later line about the same subject with a value of the same kind replaces it."""
    return set(_value_kinds(values))


@lru_cache(maxsize=65_536)
def _value_kinds(values: frozenset[str]) -> frozenset[str]:
    return frozenset(_kind_of(v) for v in values)


@lru_cache(maxsize=65_536)
def _kind_of(value: str) -> str:
    """A value's kind, cached by value: a run's values recur in many sets (`_value_kinds` is cached
    by the whole set), and each was matched against every kind's pattern again (issue 25)."""
    kind = next((k for k, rx in _KINDS if rx.match(value)), "other")
    return _DIMENSION.get(_UNIT.sub("", value.lower()), kind) if kind == "quantity" else kind


_UNIT = re.compile(r"^[\d.,\s°]+")
_DIMENSION = {
    **dict.fromkeys(("%",), "percent"),
    **dict.fromkeys(("ms", "s", "sec", "secs", "m", "min", "mins", "h", "hr", "hrs", "d", "millisecond", "milliseconds",
                     "second", "seconds", "minute", "minutes", "hour", "hours", "day", "days", "week", "weeks"),
                    "duration"),
    **dict.fromkeys(("kb", "mb", "gb", "tb", "kib", "mib", "gib", "ki", "mi", "gi", "ti"), "size"),
    **dict.fromkeys(("rps", "qps", "rpm"), "rate"),
}
"""A quantity's kind by its unit: "30 seconds" and "45s" are one kind (a duration), "99.9%" and
"4 hours" two, so "The SLA was raised to 4 hours" does not replace "Our SLA is 99.9%". Other units
(°C, 10k, 2x) stay "quantity"."""


def specific_kinds(values: frozenset[str]) -> set[str]:
    """`value_kinds` without the plain ones (numbers, other), which many attributes share."""
    return value_kinds(values) - {"number", "other"}
