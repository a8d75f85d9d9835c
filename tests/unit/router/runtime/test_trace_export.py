"""When tracing is on (router/runtime/trace_export.py): the standard OpenTelemetry
variables decide, and off, nothing of the SDK is imported."""

from __future__ import annotations

import subprocess
import sys

import pytest

from router.runtime.trace_export import call_tracer, tracing_wanted


@pytest.mark.parametrize(
    ("environ", "wanted"),
    [
        ({}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, True),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, True),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "  "}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_EXPORTER": "none"}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "false"}, True),
    ],
)
def test_the_standard_variables_turn_tracing_on(environ, wanted):
    assert tracing_wanted(environ) is wanted
    assert (call_tracer(environ) is not None) is wanted


def test_with_tracing_off_the_front_doors_and_runtime_import_no_tracing_sdk():
    # redis-py imports the SDK's metrics package when it is installed (its own metrics,
    # unused here); the tracing SDK and the exporter are simroute's to import, only when on.
    code = (
        "import sys, router.runtime.runtime, router.mcp.middleware, router.http.addon\n"
        "from router.runtime.trace_export import call_tracer\n"
        "assert call_tracer({}) is None\n"
        "print(sorted(m for m in sys.modules if m.startswith(('opentelemetry.sdk.trace', 'opentelemetry.exporter'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == "[]"
