"""Run one function on many threads at once (a barrier releases them together), for the store's
concurrency tests."""

from __future__ import annotations

import threading
from collections.abc import Callable


def run_threads(target: Callable[[int], None], n: int) -> list[BaseException]:
    """`target(i)` on `n` threads started together; what they raised (the test asserts it empty)."""
    barrier = threading.Barrier(n)
    errors: list[BaseException] = []

    def wrapped(i: int) -> None:
        try:
            barrier.wait()
            target(i)
        except BaseException as exc:  # surfaced by the caller's assertion
            errors.append(exc)

    threads = [threading.Thread(target=wrapped, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=240)
    return errors
