"""The other end of bench/overhead.py, in a process of its own: the OTLP/HTTP receiver the spans
are exported to (tests/support/otlp_receiver.py, which decodes every request as a collector
would) and a scraper that reads the worker's metrics endpoints as Prometheus does.

A process of its own so that what a collector and Prometheus spend (decoding spans, reading and
parsing scrapes) does not count as the worker's CPU, which the benchmark measures with the
process's own CPU clock.

Line protocol (stdin commands; the first line out, unasked, is `{"otlp": URL}`):

    urls URL [URL ...]   the endpoints a tick scrapes; answers {"ok": true}
    tick                 scrape each URL once, on the scraper's thread; no answer (the benchmark sends
                         one every so many model calls, so that scrapes follow the work, not the clock)
    drain                wait until the ticks sent so far are scraped; answers {"ok": true}
    count                {"spans": N, "requests": N, "scrapes": N, "failures": [...]}: totals so far

    python -m bench.overhead_sidecar      # started by bench/overhead.py; ends at end of input
"""

from __future__ import annotations

import json
import queue
import sys
import threading
import urllib.request

from tests.support.otlp_receiver import OtlpReceiver


class Scraper:
    """Scrapes every URL once per tick, in order, on a thread of its own."""

    def __init__(self) -> None:
        self.scrapes = 0
        self.failures: list[str] = []
        self.urls: list[str] = []
        self.ticks: queue.Queue[list[str]] = queue.Queue()
        threading.Thread(target=self._loop, daemon=True).start()

    def _loop(self) -> None:
        while True:
            urls = self.ticks.get()
            try:
                for url in urls:
                    with urllib.request.urlopen(url, timeout=30) as response:
                        response.read()
                    self.scrapes += 1
            except OSError as exc:  # said in `count`; the thread goes on, so `drain` still returns
                self.failures.append(f"{type(exc).__name__}: {exc}")
            finally:
                self.ticks.task_done()

    def tick(self) -> None:
        self.ticks.put(list(self.urls))


def main() -> int:
    receiver, scraper = OtlpReceiver(), Scraper()
    spans = 0

    def say(answer: dict[str, object]) -> None:
        print(json.dumps(answer), flush=True)

    say({"otlp": receiver.url})
    try:
        for line in sys.stdin:
            words = line.split()
            if not words:
                continue
            if words[0] == "urls":
                scraper.urls = words[1:]
                say({"ok": True})
            elif words[0] == "tick":
                scraper.tick()
            elif words[0] == "drain":
                scraper.ticks.join()
                say({"ok": True})
            elif words[0] == "count":
                with receiver.lock:  # the count is enough: do not hold every span of the bench
                    spans, requests = spans + len(receiver.spans), receiver.requests
                    receiver.spans.clear()
                say({"spans": spans, "requests": requests, "scrapes": scraper.scrapes, "failures": scraper.failures})
            else:
                say({"error": f"unknown command {words[0]!r}"})
    finally:
        receiver.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
