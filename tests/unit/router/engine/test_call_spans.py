"""The engine's span per call (router/addons/tracing.py), read back from the
OpenTelemetry SDK's in-memory exporter: one span per call on every route, parented
by the context current when the call is decided, the current span while the real
side runs, and none at all without a tracer."""

from __future__ import annotations

from kit.calls import make_call
from kit.engine import FakeReal, c, make_engine
from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from calls import Call, Observation, Provenance, Route, Session
from router.addons.tracing import CallTracer, incoming
from router.engine.trace_context import inject

DENY_RULE = {"name": "no-drops", "match": {"tool": "drop"}, "route": "deny", "reason": "not here"}


def exporting() -> tuple[CallTracer, InMemorySpanExporter]:
    """A tracer of a provider of its own (the global one stays untouched)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return CallTracer(provider.get_tracer("test")), exporter


async def traced_engine(tmp_path, **options):
    engine, store = await make_engine(tmp_path, **options)
    tracer, exporter = exporting()
    engine.tracer = engine.addons.add(tracer)
    return engine, exporter


async def test_a_real_call_has_one_span_current_while_the_real_side_runs(tmp_path):
    engine, exporter = await traced_engine(tmp_path)
    seen: list[trace.SpanContext] = []

    async def real(call: Call) -> Observation:
        seen.append(trace.get_current_span().get_span_context())
        return Observation([{"type": "text", "text": "ok"}], Provenance.REAL)

    outcome = await engine.handle(c("s1", q=1), Session("s1"), real)
    [span] = exporter.get_finished_spans()
    assert span.name == "execute_tool tool" and seen == [span.get_span_context()]
    attributes = dict(span.attributes or {})
    assert attributes["gen_ai.operation.name"] == "execute_tool" and attributes["gen_ai.tool.name"] == "tool"
    assert attributes["mcp.method.name"] == "tools/call" and attributes["mcp.session.id"] == "s1"
    assert (attributes["simroute.route"], attributes["simroute.provenance"], attributes["simroute.policy"]) == (
        "real",
        "real",
        "mode",
    )
    assert attributes["simroute.record_id"] == outcome.record.id and "error.type" not in attributes
    assert span.status.is_ok


async def test_denied_and_rejected_calls_have_spans_with_their_error_type(tmp_path):
    engine, exporter = await traced_engine(tmp_path, rules=[DENY_RULE])
    real = FakeReal()
    await engine.handle(make_call("drop", session="s1"), Session("s1"), real)
    await engine.reject(c("s1", q=2), Session("s1"), policy="input-schema", reason="bad arguments")
    denied, rejected = exporter.get_finished_spans()
    assert real.calls == 0
    assert denied.attributes["simroute.route"] == "deny" and denied.attributes["error.type"] == "denied"
    assert denied.attributes["simroute.policy"] == "rules:no-drops" and not denied.status.is_ok
    assert rejected.attributes["simroute.policy"] == "input-schema" and rejected.attributes["error.type"] == "denied"
    assert rejected.start_time <= rejected.end_time


async def test_a_real_side_that_times_out_is_a_simroute_error(tmp_path):
    engine, exporter = await traced_engine(tmp_path, deadline=0.05)
    await engine.handle(c("s1", q=1), Session("s1"), FakeReal(delay=1.0))
    [span] = exporter.get_finished_spans()
    assert span.attributes["simroute.provenance"] == "none" and span.attributes["error.type"] == "simroute"


async def test_an_http_call_continues_the_trace_its_headers_carry_and_passes_it_on(tmp_path):
    engine, exporter = await traced_engine(tmp_path)
    trace_id, parent = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
    headers = {"traceparent": f"00-{trace_id}-{parent}-01"}
    call = Call("http", "example.test:80", "GET", {"method": "GET", "url": "http://example.test/items"}, "s1")
    with incoming(engine.tracer, headers):
        pending = await engine.begin(call, Session("s1"), read_only=True)
    outgoing: dict[str, str] = {}
    assert inject(pending, outgoing)
    await engine.complete(pending, Observation([], Provenance.REAL, structured={"status": 200}))
    [span] = exporter.get_finished_spans()
    assert format(span.context.trace_id, "032x") == trace_id and format(span.parent.span_id, "016x") == parent
    assert outgoing["traceparent"] == f"00-{trace_id}-{format(span.context.span_id, '016x')}-01"
    assert span.name == "GET example.test:80" and span.attributes["http.response.status_code"] == 200
    assert span.attributes["url.full"] == "http://example.test/items" and "mcp.method.name" not in span.attributes


async def test_without_a_tracer_no_span_is_made_and_headers_are_left_alone(tmp_path):
    engine, _ = await make_engine(tmp_path)
    assert engine.addons.find(CallTracer) is None
    headers = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
    token = otel_context.attach(propagate.extract(headers))  # even inside a caller's trace
    try:
        with incoming(engine.addons.find(CallTracer), headers):
            pending = await engine.begin(c("s1", q=1), Session("s1"))
    finally:
        otel_context.detach(token)
    outgoing = dict(headers)
    assert not inject(pending, outgoing) and outgoing == headers
    assert not any(key.startswith("tracing") for key in pending.metadata)
    await engine.complete(pending, Observation([], Provenance.REAL))


async def test_simulated_and_perturbed_calls_say_so(tmp_path):
    from kit.engine import FakeSimulator

    from policies.perturbation import PlanConfig, compile_plan
    from router.addons.perturbation.addon import Perturber

    engine, exporter = await traced_engine(tmp_path / "sim", mode=Route.SIM)
    engine.simulator = FakeSimulator()
    await engine.handle(c("s1", q=1), Session("s1"), FakeReal())
    [simulated] = exporter.get_finished_spans()
    assert simulated.attributes["simroute.route"] == "sim" and simulated.attributes["simroute.provenance"] == "sim"
    assert "simroute.perturbation" not in simulated.attributes and "error.type" not in simulated.attributes

    engine, exporter = await traced_engine(tmp_path / "real")
    plan = PlanConfig.model_validate({"seed": 7, "rules": [{"name": "down", "kind": "error", "every": 2}]})
    engine.addons.add(Perturber({"p": compile_plan("p", plan)}, default="p"))
    session = Session("s1")
    for n in range(2):
        await engine.handle(c("s1", q=n), session, FakeReal())
    untouched, faulted = exporter.get_finished_spans()
    assert "simroute.perturbation" not in untouched.attributes and untouched.attributes["simroute.provenance"] == "real"
    assert (
        faulted.attributes["simroute.perturbation"] == "error" and faulted.attributes["simroute.provenance"] == "none"
    )
    assert faulted.attributes["simroute.route"] == "real" and faulted.attributes["error.type"] == "simroute"


async def test_shadow_work_is_a_child_span_carrying_the_divergence(tmp_path):
    from kit.engine import FakeSimulator, with_shadow

    engine, exporter = await traced_engine(tmp_path, mode=Route.SHADOW)
    runner = with_shadow(engine, engine.replay.store, FakeSimulator("sim says hi"))
    runner.tracer = engine.tracer.tracer
    await engine.handle(c("s1", q=1), Session("s1"), FakeReal())
    await runner.wait(5)
    call_span, shadow = exporter.get_finished_spans()
    assert call_span.attributes["simroute.route"] == "shadow" and call_span.attributes["simroute.provenance"] == "real"
    assert shadow.name == "shadow tool" and shadow.parent.span_id == call_span.context.span_id
    assert shadow.context.trace_id == call_span.context.trace_id
    assert shadow.attributes["simroute.provenance"] == "sim" and shadow.attributes["simroute.divergence"] > 0
    assert (
        shadow.attributes["simroute.divergence_kind"]
        and shadow.attributes["simroute.record_id"] == call_span.attributes["simroute.record_id"]
    )
    await runner.aclose()
