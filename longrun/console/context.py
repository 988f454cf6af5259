"""What every request of the console shares: settings, the store, a Temporal client (connected on
first use, so the pages that only read work while Temporal is down), the live feeds, the session
MAC key, and what bounds sign-ins and audited refusals."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry
from temporalio.client import Client

from longrun.client.connection import connect_temporal
from longrun.client.feeds import Feeds
from longrun.console.cache import AuditCache
from longrun.console.errors import Unavailable
from longrun.console.session_mac import SessionMac, load_session_mac
from longrun.console.throttle import Derivations, RefusalBudget
from longrun.console.views import sse_frame
from longrun.errors import StackNotRunning
from longrun.service.settings import Settings
from longrun.store import Store
from longrun.telemetry.overview import MIN_INTERVAL, console_registry


@dataclass
class Console:
    """The console's shared parts. `session_hours` bounds a sign-in; `secure_cookies` adds the
    Secure flag (set it when a TLS proxy serves the console); `session_mac` signs session rows
    (default: `LONGRUN_CONSOLE_SECRET` or `$LONGRUN_HOME/console-session.key`, see `session_mac`)."""

    settings: Settings
    store: Store
    session_hours: float = 8.0
    secure_cookies: bool = False
    feed_interval: float = 0.25
    session_mac: SessionMac | None = None
    metrics_interval: float = MIN_INTERVAL
    """Seconds `/metrics` reuses one read of its counts for (`longrun.telemetry.overview`)."""
    feeds: Feeds = field(init=False)
    metrics: CollectorRegistry = field(init=False)
    derivations: Derivations = field(default_factory=Derivations, init=False)
    refusals: RefusalBudget = field(default_factory=RefusalBudget, init=False)
    audits: AuditCache = field(init=False)
    _client: Client | None = field(default=None, init=False)
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock, init=False)

    def __post_init__(self) -> None:
        if self.session_mac is None:
            self.session_mac = load_session_mac(self.settings.home)
        self.audits = AuditCache(self.store)
        self.feeds = Feeds(self.store, interval=self.feed_interval, render=sse_frame)
        self.metrics = console_registry(self.store, self.metrics_interval)

    async def client(self) -> Client:
        """The Temporal client, connected once.

        Raises:
            Unavailable: Temporal does not answer (the message says how to start it)."""
        async with self._lock:
            if self._client is None:
                try:
                    self._client = await connect_temporal(self.settings.temporal_address, self.settings.namespace)
                except StackNotRunning as exc:
                    raise Unavailable(str(exc)) from exc
            return self._client

    @property
    def mac(self) -> SessionMac:
        assert self.session_mac is not None  # set in __post_init__
        return self.session_mac


__all__ = ["Console"]
