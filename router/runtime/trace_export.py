"""Exporting the calls' spans over OTLP/HTTP, when the standard OpenTelemetry
environment asks for it.

On when `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is
set, unless `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`. Off, nothing of
the OpenTelemetry SDK is imported and the engine gets no `CallTracer`: no call
creates a span. The exporter, the batch processor and the sampler read the rest of
the standard variables themselves (`OTEL_EXPORTER_OTLP_HEADERS`, `..._TIMEOUT`,
`OTEL_BSP_*`, `OTEL_TRACES_SAMPLER`, `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`).

Spans leave in batches on the SDK's own thread, never on a call's path; the provider
is flushed when the runtime closes, within the exporter's timeout.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

from opentelemetry import trace

from router.addons.tracing import CallTracer

log = logging.getLogger("simroute.tracing")

SERVICE_NAME = "simroute"
_ENDPOINTS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")


def tracing_wanted(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether the environment asks for spans to be exported (see the module's doc)."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if environ.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower() == "none":
        return False
    return any(environ.get(name, "").strip() for name in _ENDPOINTS)


def call_tracer(environ: Mapping[str, str] = os.environ) -> CallTracer | None:
    """The engine's span watcher when tracing is wanted, else None. Its tracer is the
    API's proxy: spans are recorded once `start_export` installed the provider."""
    if not tracing_wanted(environ):
        return None
    return CallTracer(trace.get_tracer("simroute"))


def start_export() -> Any:
    """Installs the global tracer provider exporting over OTLP/HTTP (the SDK imported
    here, only now). Returns the provider, for `stop_export`."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create()  # OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": SERVICE_NAME}))
    provider = TracerProvider(resource=resource)
    exporter = OTLPSpanExporter()  # endpoint, headers, timeout and compression from the environment
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    log.info("exporting spans over OTLP/HTTP to %s", exporter._endpoint)
    return provider


def stop_export(provider: Any) -> None:
    """Flushes the spans still queued and stops the exporter (blocking: run it off the
    event loop). Bounded by the exporter's timeout."""
    provider.shutdown()
