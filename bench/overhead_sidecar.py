"""The other end of bench/overhead.py, in a process of its own: the OTLP/HTTP receiver the spans
are exported to (tests/support/otlp_receiver.py, which decodes every request as a collector
would) and a scraper that reads the worker's metrics endpoints as Prometheus does.

A process of its own so that what a collector and Prometheus spend (decoding spans, reading and
parsing scrapes) does not count as the worker's CPU, which the benchmark measures with the
process's own CPU clock.

Line protocol (stdin commands, one JSON line of answer each on stdout; the first line out, unasked,
is `{"otlp": URL}`):

    scrape EVERY URL [URL ...]   scrape every URL each EVERY seconds until `stop`
    stop                         stop scraping
    count                        {"spans": N, "requests": N, "scrapes": N}: totals so far

    python -m bench.overhead_sidecar      # started by bench/overhead.py; ends at end of input
"""

from __future__ import annotations

import json
import sys
import threading
import urllib.request

from tests.support.otlp_receiver import OtlpReceiver


class Scraper:
    """Reads each URL every `every` seconds on a thread, from `start` until `stop`."""

    def __init__(self) -> None:
        self.scrapes = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, every: float, urls: list[str]) -> None:
        self.stop()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, args=(every, urls, self._stop), daemon=True)
        self._thread.start()

    def _loop(self, every: float, urls: list[str], stop: threading.Event) -> None:
        while not stop.is_set():
            for url in urls:
                with urllib.request.urlopen(url, timeout=30) as response:
                    response.read()
                self.scrapes += 1
            stop.wait(every)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None


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
            if words[0] == "scrape":
                scraper.start(float(words[1]), words[2:])
                say({"ok": True})
            elif words[0] == "stop":
                scraper.stop()
                say({"ok": True})
            elif words[0] == "count":
                with receiver.lock:  # the count is enough: do not hold every span of the bench
                    spans, requests = spans + len(receiver.spans), receiver.requests
                    receiver.spans.clear()
                say({"spans": spans, "requests": requests, "scrapes": scraper.scrapes})
            else:
                say({"error": f"unknown command {words[0]!r}"})
    finally:
        scraper.stop()
        receiver.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
