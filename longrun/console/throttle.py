"""What bounds the work an anonymous or low-privileged caller can make the console do.

- **Sign-in limits** (`SIGN_IN_LIMITS`): failed attempts are counted in PostgreSQL
  (`Store.record_sign_in`, recorded *before* the password is tried) per (client address, name), per
  client address, and over the whole console. Counting per address and name means a flood from
  one address cannot lock a name out for everyone; the per-address and global limits stop a flood
  of made-up names. The address is the TCP peer: the console trusts no forwarded-for header, so
  behind a proxy every client shares the proxy's address and the per-address limit acts as a
  second global one.
- **Key derivations** (`Derivations`): a sign-in's work (its bookkeeping and scrypt, ~0.1 s and
  32 MiB) runs in a pool of its own, so sign-ins cannot occupy the threads every read uses; the
  pool has two threads, or one on a machine with fewer than four cores, so scrypt leaves a core
  to the reads; and at most `max_waiting` more wait for it, beyond which a sign-in is answered
  429 at once, before anything is recorded.
- **Audited refusals** (`RefusalBudget`): a refused decision or operator request is written into
  the run's audit, which is append-only; a person gets `per_window` such rows a minute, and
  further refusals are answered without one.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections import defaultdict, deque
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from functools import partial
from typing import Any, TypeVar

from longrun.console.errors import TooManyRequests
from longrun.store.console import SignInLimit, SignInRefused

T = TypeVar("T")

SIGN_IN_LIMITS = (
    SignInLimit("pair", attempts=5, window=300.0),
    SignInLimit("client", attempts=20, window=300.0),
    SignInLimit("all", attempts=200, window=300.0),
)


def refusal_message(refused: SignInRefused, name: str, client: str) -> str:
    """What a throttled sign-in is told (the same whether or not `name` exists)."""
    wait = f"wait {refused.wait_seconds} s and try again"
    if refused.limit.scope == "pair":
        return f"too many failed sign-ins for {name} from {client}: {wait}"
    if refused.limit.scope == "client":
        return f"too many failed sign-ins from {client}: {wait}"
    return f"too many failed sign-ins on this console just now: {wait}"


def default_workers() -> int:
    """Two threads for derivations, or one where there are fewer than four cores."""
    return max(1, min(2, (os.cpu_count() or 2) // 2))


class Derivations:
    """A small pool for password key derivations, with a bounded queue in front of it."""

    def __init__(self, workers: int | None = None, max_waiting: int = 16) -> None:
        self.workers = workers or default_workers()
        self.max_waiting = max_waiting
        self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="longrun-kdf")
        self._admitted = 0
        self._running = 0
        self._lock = threading.Lock()
        self.peak = 0
        """The most calls that ever ran on the pool at once (never more than `workers`)."""

    @asynccontextmanager
    async def admitted(self) -> AsyncIterator[None]:
        """A place in the queue for one sign-in.

        Raises:
            TooManyRequests: `workers + max_waiting` sign-ins are already in."""
        if self._admitted >= self.workers + self.max_waiting:
            raise TooManyRequests("the console is busy checking other sign-ins: try again in a few seconds",
                                  retry_after=2)
        self._admitted += 1
        try:
            yield
        finally:
            self._admitted -= 1

    def _counted(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        with self._lock:
            self._running += 1
            self.peak = max(self.peak, self._running)
        try:
            return fn(*args, **kwargs)
        finally:
            with self._lock:
                self._running -= 1

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """`fn(*args, **kwargs)` on the pool's threads."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, partial(self._counted, fn, *args, **kwargs))

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


class RefusalBudget:
    """How many refusals of one person the console writes into audits per window (in this
    process: each console process keeps its own count)."""

    def __init__(self, per_window: int = 10, window: float = 60.0) -> None:
        self.per_window = per_window
        self.window = window
        self._seen: dict[str, deque[float]] = defaultdict(deque)
        self._lock = threading.Lock()

    def allow(self, principal: str) -> bool:
        """True (and counted) if `principal` has room left for an audited refusal."""
        now = time.monotonic()
        with self._lock:
            times = self._seen[principal]
            while times and now - times[0] > self.window:
                times.popleft()
            if len(times) >= self.per_window:
                return False
            times.append(now)
            return True


__all__ = ["SIGN_IN_LIMITS", "Derivations", "RefusalBudget", "refusal_message"]
