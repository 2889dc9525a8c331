"""A test double of an OpenTelemetry collector: a local HTTP server taking OTLP/HTTP trace exports
(`POST /v1/traces`, protobuf `ExportTraceServiceRequest`) and keeping every span it decoded, with
its attributes as plain Python values."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

from support.local_http import LocalHttpServer


@dataclass(frozen=True)
class ReceivedSpan:
    """One exported span as the receiver decoded it."""

    name: str
    trace_id: bytes
    span_id: bytes
    parent_span_id: bytes
    attributes: dict[str, Any]
    service: str


class OtlpReceiver(LocalHttpServer):
    """Accepts OTLP/HTTP trace exports; `spans()` lists what arrived."""

    def __init__(self) -> None:
        self.received: list[ReceivedSpan] = []
        self.exports = 0
        self.lock = threading.Lock()
        self._listen()

    @property
    def endpoint(self) -> str:
        """What OTEL_EXPORTER_OTLP_ENDPOINT is set to (the exporter adds /v1/traces)."""
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def spans(self) -> list[ReceivedSpan]:
        """Every span received so far."""
        with self.lock:
            return list(self.received)

    def take(self, data: bytes) -> None:
        """Decode one export request and keep its spans."""
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

        request = ExportTraceServiceRequest.FromString(data)
        spans = []
        for resource_spans in request.resource_spans:
            resource = {kv.key: _value(kv.value) for kv in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    spans.append(ReceivedSpan(span.name, span.trace_id, span.span_id, span.parent_span_id,
                                              {kv.key: _value(kv.value) for kv in span.attributes},
                                              str(resource.get("service.name"))))
        with self.lock:
            self.received += spans
            self.exports += 1

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802
                data = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                status = 200 if self.path == "/v1/traces" else 404
                if status == 200:
                    receiver.take(data)
                self.send_response(status)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        return Handler


def _value(value: Any) -> Any:
    """An OTLP AnyValue as a Python value (arrays as lists)."""
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(item) for item in value.array_value.values]
    return getattr(value, kind) if kind else None
