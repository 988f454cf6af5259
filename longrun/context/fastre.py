"""Case-insensitive cue patterns searched fast, with the same answers.

Why: fact extraction searches every line of a transcript with a dozen `re.IGNORECASE` patterns
of many alternatives ("never|always|must|..."). CPython's `re` cannot skip ahead to a candidate
position under IGNORECASE, so each search tried every alternative at every character, and this
was most of what extraction cost at compaction (issue 25: 1.6 s per 100k tokens on real sessions,
against a goal of 100 ms). The same pattern without the flag, searched in the lowercased line,
is 3-4 times faster.

Exact, not approximate: `Folded.search` answers what the pattern answers.
- A miss is decided on the lowercased line by the pattern compiled without IGNORECASE, which
  holds only when lowering changes nothing the flag would not: the pattern has no uppercase
  letter outside its escapes (checked at import; otherwise the pattern is searched as it is),
  and the line has none of the four characters whose case pairs cross into ASCII differently
  for `str.lower` and for `re` (İ, ı, ſ, K; such a line is searched as it is).
- A hit is searched again with the pattern itself, so the match returned is the pattern's own.

`spans` does the same for `finditer`, for the value patterns whose matches are cut out of a line
(`facts._analysis`): it gives the spans in the original line, whose length lowering keeps.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, cast

_ODD = frozenset("\u0130\u0131\u017f\u212a")
"""İ (lowers to two characters), ı and ſ (match i and s under IGNORECASE, not after lowering), K."""
_ESCAPE = re.compile(r"\\.", re.S)


_last: tuple[str, str | None] = ("", "")
"""The last text lowered and its lowercase (None: not foldable): a line is searched by a dozen
patterns in a row. One tuple, swapped whole, so threads never see a text with another's lowercase."""


def _lowered(text: str) -> str | None:
    """`text` lowercased, or None when lowering would not answer as IGNORECASE does."""
    global _last
    last = _last
    if last[0] is text:
        return last[1]
    low = text.lower() if text.isascii() or _ODD.isdisjoint(text) else None
    _last = (text, low)
    return low


def _fast_copy(pattern: re.Pattern[str]) -> re.Pattern[str] | None:
    """The pattern without IGNORECASE, for lowercased text; None when that would not be the same."""
    bare = _ESCAPE.sub("", pattern.pattern)
    if not pattern.flags & re.I or any(c.isupper() for c in bare) or "(?-" in bare:
        return None  # a scoped case-sensitive part would match lowered capitals
    return re.compile(pattern.pattern, pattern.flags & ~re.I)


class Folded:
    """A compiled pattern whose `search` is decided on the lowercased text (module docstring);
    everything else is the pattern's own."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.compiled = pattern
        self._fast = _fast_copy(pattern)

    def search(self, text: str, *args: Any) -> re.Match[str] | None:
        fast = self._fast
        low = _lowered(text) if fast is not None and not args else None
        if fast is None or low is None:
            return self.compiled.search(text, *args)
        if fast.search(low) is None:
            return None
        return self.compiled.search(text)

    def found(self, text: str) -> bool:
        """`bool(search(text))`, decided on the lowercased text both ways: a hit there is a hit of
        the pattern (what `spans` relies on too), so it is not searched again (issue 25's cost).
        The last text's lowercase is read here, not through `_lowered`: a line is asked a dozen
        patterns in a row, and the call was a third of what each question cost beside its search."""
        fast = self._fast
        if fast is None:
            return self.compiled.search(text) is not None
        last = _last
        low = last[1] if last[0] is text else _lowered(text)
        if low is None:
            return self.compiled.search(text) is not None
        return fast.search(low) is not None

    def sub(self, repl: str, text: str) -> str:
        """`compiled.sub(repl, text)` for a plain `repl` (no group references), from `spans`."""
        parts: list[str] = []
        at = 0
        for a, b in self.spans(text):
            parts += (text[at:a], repl)
            at = b
        if not parts:
            return text
        parts.append(text[at:])
        return "".join(parts)

    def spans(self, text: str) -> Iterator[tuple[int, int]]:
        """The (start, end) of each match of `finditer(text)`."""
        return (m.span() for m in self.located(text))

    def located(self, text: str) -> Iterator[re.Match[str]]:
        """Matches whose spans are those of `finditer(text)` (of the lowercased text when it
        answers the same): read their `span()` only, their text may be lowercased."""
        fast = self._fast
        low = _lowered(text) if fast is not None else None
        return fast.finditer(low) if fast is not None and low is not None else self.compiled.finditer(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.compiled, name)


def found(pattern: re.Pattern[str] | Folded, text: str) -> bool:
    """`bool(pattern.search(text))`, by `Folded.found` for a folded pattern."""
    if type(pattern) is Folded:
        return pattern.found(text)
    return pattern.search(text) is not None


def fold(pattern: re.Pattern[str]) -> re.Pattern[str]:
    """`Folded(pattern)`, typed as the pattern it stands for: callers use `search` (and anything
    else a pattern has, delegated), never `isinstance`."""
    return cast(re.Pattern[str], Folded(pattern))
