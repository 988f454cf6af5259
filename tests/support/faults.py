"""A real `Store` with faults injected into chosen calls, for the activities a test runs.

It is the project's own Store on the test's database (same engine); only the calls a test names
misbehave, and only as often as it says: a worker built on it sees a database that refuses one
write, or is briefly unreachable, or has another writer racing it. The test itself keeps reading
through the plain `store` fixture.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from longrun.store import Store


@dataclass
class Fault:
    method: str
    when: Callable[..., bool]
    action: Callable[..., Any]
    times: int


class FaultyStore(Store):
    def __init__(self, base: Store) -> None:
        super().__init__(base.engine)
        self._faults: list[Fault] = []
        self._lock = threading.Lock()
        self.calls: Counter[str] = Counter()
        """How often each faulted method was called (all calls, matching or not)."""
        self.fired: Counter[str] = Counter()
        """How often each fault fired."""

    def inject(
        self,
        method: str,
        action: Callable[..., Any],
        *,
        times: int = 1,
        when: Callable[..., bool] = lambda *a, **k: True,
    ) -> None:
        """Make the next `times` calls of `method` whose arguments satisfy `when` run `action`
        (with the same arguments) first: raise to fail the call, return to let it go on."""
        with self._lock:
            self._faults.append(Fault(method, when, action, times))
        if method not in self.__dict__:
            real = getattr(self, method)

            def faulted(*args: Any, **kwargs: Any) -> Any:
                with self._lock:
                    self.calls[method] += 1
                    fault = next(
                        (f for f in self._faults if f.method == method and f.times > 0 and f.when(*args, **kwargs)),
                        None,
                    )
                    if fault is not None:
                        fault.times -= 1
                        self.fired[method] += 1
                if fault is not None:
                    fault.action(*args, **kwargs)
                return real(*args, **kwargs)

            setattr(self, method, faulted)

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()


def raising(exc: BaseException) -> Callable[..., None]:
    def action(*_: Any, **__: Any) -> None:
        raise exc

    return action
