"""An external effect target for tests: an HTTP message sink that counts every delivery.

Effects are counted *at their target*: a duplicate send shows up here as a second delivery of
the same idempotency key, whatever the ledger believes.
"""

from __future__ import annotations

import json
import threading
import urllib.request
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

from longrun.tools.base import ReconcileOutcome, Tool, ToolContext, ToolOutcome


class Sink:
    def __init__(self) -> None:
        self.deliveries: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                with sink.lock:
                    sink.deliveries.append(body)
                    n = len(sink.deliveries)
                self._send({"id": f"msg-{n}"})

            def do_GET(self) -> None:
                key = parse_qs(urlparse(self.path).query).get("key", [""])[0]
                with sink.lock:
                    found = [i for i, d in enumerate(sink.deliveries, 1) if d.get("key") == key]
                self._send({"delivered": bool(found), "id": f"msg-{found[0]}" if found else None})

            def _send(self, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def counts(self) -> Counter:
        with self.lock:
            return Counter(d["key"] for d in self.deliveries)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def send_tool(sink_url: str, *, pause_after_send: float = 0.0, reconcile: bool = True) -> Tool:
    """`send_message {text}`: an effect at the sink, keyed by the action's idempotency key.
    `reconcile=False` is the control: it cannot tell, so a retry sends again."""
    import time

    def run(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        data = json.dumps({"key": ctx.action_id, "text": args["text"]}).encode()
        req = urllib.request.Request(sink_url, data=data, headers={"content-type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            sent = json.loads(resp.read())
        if pause_after_send:
            time.sleep(pause_after_send)
        return ToolOutcome(text=f"sent {sent['id']}", external_id=sent["id"])

    def check_sink(args: dict[str, Any], ctx: ToolContext) -> ReconcileOutcome:
        if not reconcile:
            return ReconcileOutcome(status="none", detail="control mode: assumes the send did not happen")
        with urllib.request.urlopen(f"{sink_url}/?key={ctx.action_id}", timeout=10) as resp:
            found = json.loads(resp.read())
        if found["delivered"]:
            return ReconcileOutcome(status="confirmed", external_id=found["id"], detail="the sink has this key")
        return ReconcileOutcome(status="none", detail="the sink never received this key")

    return Tool(
        name="send_message",
        description="Send a message to the team channel.",
        input_schema={
            "type": "object",
            "properties": {"text": {"type": "string", "maxLength": 2000}},
            "required": ["text"],
            "additionalProperties": False,
        },
        kind="effect",
        needs_approval=False,
        run=run,
        reconcile=check_sink,
    )
