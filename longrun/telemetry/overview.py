"""The console's Prometheus metrics: counts over every run, read from PostgreSQL at scrape time
(`Store.overview`), so they are right with any number of workers and consoles, and after a
restart. `OverviewCollector` reads at most once per `MIN_INTERVAL` seconds, however often (and by
whom) `/metrics` is asked: the endpoint needs no session, and must not become a way to load the
database.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from longrun.models.run import RunStatus
from longrun.store import Store
from longrun.store.overview import Overview

log = logging.getLogger(__name__)

MIN_INTERVAL = 5.0
"""Seconds a read of the overview is reused for (Prometheus scrapes every 15 s or more)."""


class OverviewCollector(Collector):
    """Runs by status, pending approvals and the age of the oldest, open effects of unknown
    outcome; `longrun_overview_up` says whether PostgreSQL answered."""

    def __init__(self, store: Store, min_interval: float = MIN_INTERVAL) -> None:
        self.store = store
        self.min_interval = min_interval
        self._lock = threading.Lock()
        self._read: tuple[float, Overview] | None = None

    def _overview(self) -> Overview:
        with self._lock:  # concurrent scrapes wait for one read instead of each making one
            now = time.monotonic()
            if self._read is None or now - self._read[0] >= self.min_interval:
                self._read = (now, self.store.overview())
            return self._read[1]

    def collect(self) -> Iterator[GaugeMetricFamily]:
        up = GaugeMetricFamily("longrun_overview_up", "1 when PostgreSQL answered the last read of these counts.")
        try:
            o = self._overview()
        except Exception as exc:  # the console stays up; the gauge and its log say why the counts are missing
            log.warning("the metrics overview could not be read from PostgreSQL: %s", exc)
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        runs = GaugeMetricFamily("longrun_runs", "Runs by status (paused: paused by an operator or waiting for a "
                                 "human; waiting_approval: running with an approval pending).", labels=["status"])
        for status in RunStatus:
            runs.add_metric([status.value], o.runs.get(status.value, 0))
        yield runs
        yield GaugeMetricFamily("longrun_approvals_pending", "Approval requests no one has answered, over the "
                                "runs not finished.", value=o.approvals_pending)
        yield GaugeMetricFamily("longrun_approval_oldest_pending_seconds", "How long the oldest pending approval "
                                "has waited (0 when none waits).", value=o.oldest_pending_seconds)
        yield GaugeMetricFamily("longrun_effects_unknown", "Open effects whose outcome is not yet known "
                                "(intent written, not settled), over the runs not finished.", value=o.effects_unknown)


def console_registry(store: Store, min_interval: float = MIN_INTERVAL) -> CollectorRegistry:
    """The registry the console's `/metrics` serves: the overview, and nothing of one person or run."""
    registry = CollectorRegistry()
    registry.register(OverviewCollector(store, min_interval))
    return registry


__all__ = ["MIN_INTERVAL", "OverviewCollector", "console_registry"]
