"""A local OTLP/HTTP trace receiver: what a collector would receive, without a collector binary.

It decodes each POST /v1/traces body as the protobuf `ExportTraceServiceRequest` (the
`opentelemetry-proto` package the exporter depends on) and keeps every span, flattened with its
service name, ids in hex and attributes as plain Python values.
"""

from __future__ import annotations

import gzip
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue


@dataclass
class ReceivedSpan:
    service: str
    name: str
    trace_id: str
    span_id: str
    parent_id: str
    kind: int
    attributes: dict[str, Any] = field(default_factory=dict)
    status_message: str = ""
    events: list[dict[str, Any]] = field(default_factory=list)


def _plain(value: AnyValue) -> Any:
    which = value.WhichOneof("value")
    if which == "array_value":
        return [_plain(v) for v in value.array_value.values]
    if which == "kvlist_value":
        return {kv.key: _plain(kv.value) for kv in value.kvlist_value.values}
    return getattr(value, which) if which else None


def decode(body: bytes) -> list[ReceivedSpan]:
    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    out: list[ReceivedSpan] = []
    for rs in request.resource_spans:
        resource = {kv.key: _plain(kv.value) for kv in rs.resource.attributes}
        for ss in rs.scope_spans:
            for s in ss.spans:
                out.append(ReceivedSpan(
                    service=str(resource.get("service.name", "")), name=s.name, trace_id=s.trace_id.hex(),
                    span_id=s.span_id.hex(), parent_id=s.parent_span_id.hex(), kind=s.kind,
                    attributes={kv.key: _plain(kv.value) for kv in s.attributes},
                    status_message=s.status.message,
                    events=[{kv.key: _plain(kv.value) for kv in e.attributes} | {"name": e.name} for e in s.events],
                ))
    return out


class OtlpReceiver:
    """`OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url`: the HTTP exporter posts to `{url}/v1/traces`."""

    def __init__(self) -> None:
        self.spans: list[ReceivedSpan] = []
        self.requests = 0
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["content-length"]))
                if self.headers.get("content-encoding") == "gzip":
                    body = gzip.decompress(body)
                if self.path != "/v1/traces" or self.headers.get("content-type") != "application/x-protobuf":
                    self.send_response(404)
                    self.end_headers()
                    return
                spans = decode(body)
                with receiver.lock:
                    receiver.spans.extend(spans)
                    receiver.requests += 1
                data = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def received(self) -> list[ReceivedSpan]:
        with self.lock:
            return list(self.spans)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
