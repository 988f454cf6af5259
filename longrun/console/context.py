"""What every request of the console shares: settings, the store, a Temporal client (connected on
first use, so the pages that only read work while Temporal is down) and the live feeds."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from temporalio.client import Client

from longrun.console.cache import AuditCache
from longrun.console.errors import Unavailable
from longrun.console.feeds import Feeds
from longrun.console.views import sse_frame
from longrun.errors import StackNotRunning
from longrun.service import client as api
from longrun.service.settings import Settings
from longrun.store import Store


@dataclass
class Console:
    """The console's shared parts. `session_hours` bounds a sign-in; `secure_cookies` adds the
    Secure flag (set it when a TLS proxy serves the console)."""

    settings: Settings
    store: Store
    session_hours: float = 8.0
    secure_cookies: bool = False
    feed_interval: float = 0.25
    feeds: Feeds = field(init=False)
    audits: AuditCache = field(init=False)
    _client: Client | None = field(default=None, init=False)
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock, init=False)

    def __post_init__(self) -> None:
        self.audits = AuditCache(self.store)
        self.feeds = Feeds(self.store, interval=self.feed_interval, render=sse_frame)

    async def client(self) -> Client:
        """The Temporal client, connected once.

        Raises:
            Unavailable: Temporal does not answer (the message says how to start it)."""
        async with self._lock:
            if self._client is None:
                try:
                    self._client = await api.connect(self.settings)
                except StackNotRunning as exc:
                    raise Unavailable(str(exc)) from exc
            return self._client


__all__ = ["Console"]
