"""A memo for functions of texts, bounded by the characters it holds rather than by entries.

`functools.lru_cache(maxsize=N)` bounds how many results a worker keeps, not how much memory:
keyed by whole tool results and summaries (kilobytes each), a cache of 8,192 or 16,384 entries
fills for thousands of turns, and a worker's RSS grows with the run until it is full (issue 26:
about 80 MiB per 1,000 turns). This one keeps at most `max_chars` characters of keys (the
least recently used go first), and never keeps a text longer than a sixteenth of that, so what it
holds is the same at turn 500 and at turn 5,000. Thread-safe: activities run in threads.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


_MISSING = object()


def _chars(key: tuple[Any, ...]) -> int:
    return sum(len(a) for a in key if isinstance(a, str)) + 1


class TextMemo(Generic[T]):
    """`fn(*args)` remembered for the most recently used arguments (hashable: texts, flags), up to
    `max_chars` characters of texts."""

    def __init__(self, fn: Callable[..., T], max_chars: int) -> None:
        self.fn = fn
        self.max_chars = max_chars
        self.chars = 0
        self._entries: OrderedDict[tuple[Any, ...], T] = OrderedDict()
        self._lock = threading.Lock()
        functools.update_wrapper(self, fn)

    def __call__(self, *args: Any) -> T:
        # a hit takes no lock: `get` and `move_to_end` are each one step under the GIL, and an entry
        # another thread drops in between is only not moved (the lock cost a hit as much as the
        # lookup itself, and extraction makes a hit for every message it reads, issue 25)
        entries = self._entries
        value = entries.get(args, _MISSING)
        if value is not _MISSING:
            try:  # noqa: SIM105 (a `suppress` context costs a hit more than its lookup)
                entries.move_to_end(args)
            except KeyError:
                pass
            return value  # type: ignore[return-value]
        value = self.fn(*args)
        size = _chars(args)
        if size * 16 > self.max_chars:
            return value
        with self._lock:
            if args not in self._entries:
                self._entries[args] = value
                self.chars += size
                while self.chars > self.max_chars and self._entries:
                    old, _ = self._entries.popitem(last=False)
                    self.chars -= _chars(old)
        return value

    def __len__(self) -> int:
        return len(self._entries)

    def cache_clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.chars = 0


def text_memo(max_chars: int) -> Callable[[Callable[..., T]], TextMemo[T]]:
    """Decorator: `@text_memo(4_000_000)` over a function of texts."""

    def wrap(fn: Callable[..., T]) -> TextMemo[T]:
        return TextMemo(fn, max_chars)

    return wrap
