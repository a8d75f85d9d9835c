"""An OTLP/HTTP trace receiver for the tracing tests: a small HTTP server on loopback
that decodes each `ExportTraceServiceRequest` (protobuf, as OpenTelemetry's OTLP/HTTP
exporter sends it) with the opentelemetry-proto package and keeps the spans."""

from __future__ import annotations

import gzip
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


@dataclass(frozen=True)
class ReceivedSpan:
    name: str
    trace_id: str  # 32 hex digits
    span_id: str  # 16 hex digits
    parent_span_id: str  # "" for a root span
    kind: int  # the proto's SpanKind (2: server, 3: client)
    attributes: dict[str, Any]
    service: str  # the resource's service.name


def _value(any_value) -> Any:
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind is not None else None


def spans_of(request: ExportTraceServiceRequest) -> list[ReceivedSpan]:
    found = []
    for resource_spans in request.resource_spans:
        resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                found.append(
                    ReceivedSpan(
                        name=span.name,
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent_span_id=span.parent_span_id.hex(),
                        kind=span.kind,
                        attributes={a.key: _value(a.value) for a in span.attributes},
                        service=str(resource.get("service.name", "")),
                    )
                )
    return found


class OtlpReceiver:
    """Listens on a free loopback port; `endpoint` is what OTEL_EXPORTER_OTLP_ENDPOINT
    names (the exporter posts to `{endpoint}/v1/traces`)."""

    def __init__(self) -> None:
        self.spans: list[ReceivedSpan] = []
        self.seen: set[tuple[str, str]] = set()
        self.lock = threading.Lock()
        self.paths: list[str] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format, *args):
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                receiver.paths.append(self.path)
                with receiver.lock:  # an export retried (a slow answer under load) carries the same spans again
                    fresh = [span for span in spans_of(request) if (span.trace_id, span.span_id) not in receiver.seen]
                    receiver.seen.update((span.trace_id, span.span_id) for span in fresh)
                    receiver.spans.extend(fresh)
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def wait_for(self, predicate, timeout_s: float = 15) -> list[ReceivedSpan]:
        """The spans received that satisfy `predicate`, once there is at least one."""
        deadline = time.monotonic() + timeout_s
        while True:
            found = [span for span in list(self.spans) if predicate(span)]
            if found or time.monotonic() > deadline:
                return found
            time.sleep(0.1)


def tracing_env(receiver: OtlpReceiver) -> dict[str, str]:
    """The standard variables that turn simroute's tracing on, exporting to `receiver`
    in batches sent every 100 ms (the default 5 s would slow the tests)."""
    return {
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
        "OTEL_BSP_SCHEDULE_DELAY": "100",
        "OTEL_SERVICE_NAME": "simroute-test",
    }
