"""Per-call cost of tracing: simroute's MCP front door with spans exported over
OTLP/HTTP against the same front door with tracing off, same run, same machine.

Sequential `get_current_time` calls to the real `mcp-server-time`, simroute over stdio,
real route; every call carries a `traceparent` in `params._meta` (as a traced agent
sends it), in both variants:
  off   no OTEL_* variable: no SDK imported, no span made (the traceparent is passed on as is)
  on    OTEL_EXPORTER_OTLP_ENDPOINT names a local OTLP/HTTP receiver in this process:
        the call's span, fastmcp's server and client spans, batched and exported
Rounds interleave the two (rotating order); the figure is the median over rounds of
each round's mean ms/call, and the cost of tracing is on minus off (also as the median of
each round's paired difference, and of the p50s: a loaded machine moves the means).

Then, in this process, the span hooks themselves (what every channel's call runs in the
engine: open at `decided`, current around the real side, `inject`, close at `finished`,
batched to the receiver) against the same steps with tracing off, timed back to back
(`_timing.paired_timings`): the CPU cost per call without the processes' noise.

Usage: python benchmarks/tracing_overhead.py [--calls 500] [--rounds 10] [--iterations 20000] [--json out.json]
                                            [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import statistics
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from _results import add_smoke_flag, row, write_results
from _timing import paired_timings
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

SIMROUTE = str(Path(sys.executable).parent / "simroute")
UPSTREAM = [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"]
ARGS = {"timezone": "Asia/Tokyo"}
WARMUP = 20


class SpanCounter:
    """A local OTLP/HTTP receiver that decodes each export and counts its spans."""

    received = 0  # spans received by every receiver of this process

    def __init__(self) -> None:
        self.spans = 0
        counter = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format, *args):
                pass

            def do_POST(self) -> None:
                request = ExportTraceServiceRequest()
                request.ParseFromString(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
                spans = sum(len(s.spans) for r in request.resource_spans for s in r.scope_spans)
                counter.spans += spans
                SpanCounter.received += spans
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def child_environment(tracing_to: str | None) -> dict[str, str]:
    """What an MCP client passes a stdio server, plus PYTHONPATH (the checkout measured)
    and, for `on`, the OTLP endpoint."""
    from mcp.client.stdio import get_default_environment

    env = get_default_environment()
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    if tracing_to is not None:
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = tracing_to
    return env


async def time_calls(config: Path, calls: int, tracing_to: str | None) -> list[float]:
    transport = StdioTransport(
        SIMROUTE, ["mcp", "--config", str(config)], env=child_environment(tracing_to), keep_alive=False
    )
    async with Client(transport) as client:
        await client.list_tools()
        samples = []
        for i in range(WARMUP + calls):
            meta = {"traceparent": f"00-{secrets.token_hex(16)}-{secrets.token_hex(8)}-01"}
            started = time.perf_counter()
            await client.call_tool("get_current_time", ARGS, meta=meta)
            if i >= WARMUP:
                samples.append((time.perf_counter() - started) * 1000)
    return samples


def span_hooks(endpoint: str, iterations: int) -> tuple[list[float], list[float], int]:
    """Microseconds per call of the engine's span steps, on (a provider batching to
    `endpoint`) and off, paired; and the spans the receiver got from the `on` side."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    from backends.replay import CallKeys
    from calls import Call, Decision, Observation, Provenance, Route, Session
    from records.record import Record
    from router.addons.tracing import CallTracer
    from router.engine.pending import Pending
    from router.engine.trace_context import as_current, inject

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{endpoint}/v1/traces")))
    tracer = CallTracer(provider.get_tracer("benchmark"))
    call = Call("mcp", "time", "get_current_time", ARGS, "bench")
    session, decision, keys = Session("bench"), Decision(Route.REAL, "mode", "benchmark"), CallKeys("k", "k")
    answer = Observation([{"type": "text", "text": "12:00"}], Provenance.REAL)

    def steps(traced: bool) -> None:
        pending = Pending(call, session, decision, 1, keys, call)
        if traced:
            deciding = tracer.decided(pending)
            try:  # awaits nothing: run to its end here
                deciding.send(None)
            except StopIteration:
                pass
        with as_current(pending):
            pass
        inject(pending, {})
        # The engine makes it either way.
        record = Record(call, decision, answer, step=1, call_key="k", id=pending.record_id)
        if traced:
            finishing = tracer.finished(pending, record)
            try:  # awaits nothing: run to its end here
                finishing.send(None)
            except StopIteration:
                pass

    before = SpanCounter.received
    on, off = paired_timings(
        iter(int, 1), lambda _: steps(True), lambda _: steps(False), iterations=iterations, warmup=iterations // 10
    )
    provider.shutdown()  # flushes what is queued
    return on, off, SpanCounter.received - before


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--iterations", type=int, default=20000, help="in-process span hook pairs")
    parser.add_argument("--json", type=Path)
    add_smoke_flag(parser)
    options = parser.parse_args()
    if options.smoke:
        options.calls, options.rounds, options.iterations = 10, 2, 200

    workdir = Path(tempfile.mkdtemp(prefix="simroute-bench-"))
    receiver = SpanCounter()
    configs = {}
    for variant in ("off", "on"):
        configs[variant] = workdir / f"simroute-{variant}.yaml"
        configs[variant].write_text(
            json.dumps(
                {
                    "mode": "real",
                    "mcpServers": {"time": {"command": UPSTREAM[0], "args": UPSTREAM[1:]}},
                    "store": {"path": str(workdir / f"records-{variant}.db")},
                    "shell": {"enabled": False},
                    "browser": {"enabled": False},
                }
            )
        )
    samples: dict[str, list[list[float]]] = {"off": [], "on": []}
    for round_index in range(options.rounds):
        order = ["off", "on"] if round_index % 2 == 0 else ["on", "off"]
        for variant in order:
            tracing_to = receiver.endpoint if variant == "on" else None
            samples[variant].append(await time_calls(configs[variant], options.calls, tracing_to))
        print(f"round {round_index + 1}/{options.rounds} done", file=sys.stderr)
    expected_calls = options.rounds * (WARMUP + options.calls)
    deadline = time.monotonic() + 10  # each `on` process flushed its spans when it stopped
    while receiver.spans < expected_calls and time.monotonic() < deadline:
        await asyncio.sleep(0.1)

    results = {}
    for variant, rounds in samples.items():
        everything = [s for r in rounds for s in r]
        results[variant] = {
            "median_ms": statistics.median(statistics.fmean(r) for r in rounds),
            "p50_ms": statistics.median(everything),
            "p95_ms": statistics.quantiles(everything, n=20)[18],
        }
    cost_ms = results["on"]["median_ms"] - results["off"]["median_ms"]
    ratio = results["on"]["median_ms"] / results["off"]["median_ms"]
    paired_ms = statistics.median(
        statistics.fmean(on) - statistics.fmean(off) for on, off in zip(samples["on"], samples["off"], strict=True)
    )
    p50_ms = results["on"]["p50_ms"] - results["off"]["p50_ms"]
    received_before = receiver.spans
    hooks_on, hooks_off, hook_spans = span_hooks(receiver.endpoint, options.iterations)
    hooks_us = statistics.median(hooks_on) - statistics.median(hooks_off)
    print(
        f"\n{options.calls} sequential calls x {options.rounds} interleaved rounds, simroute mcp over stdio, "
        "mcp-server-time upstream\n"
    )
    print(f"{'tracing':10} {'median ms/call':>15} {'p50':>8} {'p95':>8}")
    for variant, figures in results.items():
        print(f"{variant:10} {figures['median_ms']:15.3f} {figures['p50_ms']:8.3f} {figures['p95_ms']:8.3f}")
    print(f"\ncost of tracing: {cost_ms * 1000:+.0f} us/call (medians of round means)   on/off = {ratio:.3f}")
    print(f"                 {paired_ms * 1000:+.0f} us/call (median of the rounds' paired differences)")
    print(f"                 {p50_ms * 1000:+.0f} us/call (p50 on - p50 off)")
    print(
        f"spans received by the OTLP receiver: {received_before} "
        f"(calls traced: {expected_calls}, at least one span each)"
    )
    print(
        f"\nin process, {options.iterations} pairs: the engine's span steps {statistics.median(hooks_on):.1f} us on, "
        f"{statistics.median(hooks_off):.2f} us off (medians): {hooks_us:+.1f} us/call; {hook_spans} spans exported"
    )
    if received_before < expected_calls or hook_spans < options.iterations:
        raise SystemExit(
            f"the receiver got {received_before} + {hook_spans} spans for {expected_calls} + {options.iterations}: "
            "tracing did not export"
        )
    if options.json:
        figures = {
            "results": results,
            "cost_ms": cost_ms,
            "paired_ms": paired_ms,
            "p50_ms": p50_ms,
            "hooks_us": hooks_us,
        }
        options.json.write_text(json.dumps({**figures, "spans": received_before}, indent=2))
    if not options.smoke:
        rows = [
            row(f"tracing {variant} median ms/call", figures["median_ms"], "ms", better="lower")
            for variant, figures in results.items()
        ]
        rows.append(
            row("cost of tracing per call", cost_ms * 1000, "us", baseline="tracing off, same run", better="lower")
        )
        rows.append(
            row(
                "cost of tracing per call, paired rounds",
                paired_ms * 1000,
                "us",
                baseline="tracing off, same round",
                better="lower",
            )
        )
        rows.append(
            row("cost of tracing per call, p50", p50_ms * 1000, "us", baseline="tracing off, same run", better="lower")
        )
        rows.append(
            row(
                "span steps per call, in process",
                hooks_us,
                "us",
                baseline="the same steps with tracing off",
                better="lower",
            )
        )
        rows.append(row("tracing on/off", ratio, "ratio", baseline="tracing off, same run", better="lower"))
        write_results(__file__, "Per-call cost of OpenTelemetry tracing (OTLP/HTTP export) on the MCP front door", rows)


if __name__ == "__main__":
    asyncio.run(main())
