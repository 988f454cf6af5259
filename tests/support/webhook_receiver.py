"""A local webhook receiver for tests: the standard library's HTTP server in a thread, recording
every request (path, headers, the exact body bytes, when it came) and answering with the status
its `answer(path, attempt, index)` gives (a status, or a status and headers): `attempt` counts the requests of one delivery (the
`X-Longrun-Delivery` header) at one path, from 1; `index` is that delivery's place among the
deliveries received, from 0. It never logs (a request line holds the path, which may be a
canary)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Answer = Callable[[str, int, int], "int | tuple[int, dict[str, str]]"]


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    at: float
    status: int
    attempt: int

    @property
    def json(self) -> dict[str, Any]:
        return json.loads(self.body)

    @property
    def delivery(self) -> str:
        return self.headers.get("X-Longrun-Delivery", "")

    @property
    def event(self) -> str:
        return self.headers.get("X-Longrun-Event", "")


def fail_first_delivery(times: int = 2, status: int = 500, retry_after: int | None = None) -> Answer:
    """The first delivery's first `times` attempts get `status` (with `Retry-After`, if given);
    everything else 200."""
    headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}

    def answer(_path: str, attempt: int, index: int) -> int | tuple[int, dict[str, str]]:
        return (status, headers) if index == 0 and attempt <= times else 200

    return answer


def always(status: int) -> Answer:
    return lambda _path, _attempt, _index: status


class WebhookReceiver:
    def __init__(self, answer: Answer | dict[str, Answer]) -> None:
        self._answer = answer
        self.requests: list[Received] = []
        self._attempts: dict[tuple[str, str], int] = {}
        self._deliveries: list[str] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                status, extra = receiver._record(self.path, dict(self.headers.items()), body)
                self.send_response(status)
                self.send_header("Content-Type", "text/plain")
                for name, value in extra.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(b"ok" if status < 300 else b"no")

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def _record(self, path: str, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str]]:
        with self._lock:
            delivery = headers.get("X-Longrun-Delivery", "")
            if delivery not in self._deliveries:
                self._deliveries.append(delivery)
            key = (path, delivery)
            attempt = self._attempts[key] = self._attempts.get(key, 0) + 1
            answer = self._answer[path] if isinstance(self._answer, dict) else self._answer
            got = answer(path, attempt, self._deliveries.index(delivery))
            status, extra = got if isinstance(got, tuple) else (got, {})
            self.requests.append(Received(path, headers, body, time.time(), status, attempt))
            return status, extra

    def of(self, event: str, path: str | None = None) -> list[Received]:
        with self._lock:
            return [r for r in self.requests if r.event == event and (path is None or r.path == path)]

    def __enter__(self) -> WebhookReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=5)
