"""One OpenTelemetry span per routed call, whatever the channel.

The engine takes every call of every channel (MCP tools, resources and prompts, HTTP
requests, shell commands, browser actions) through `begin` and `complete`, so the
span lives here, as a call addon: opened when the call is decided (`decided`), closed
when it is recorded (`finished`). Its attributes follow OpenTelemetry's MCP and
GenAI conventions (`gen_ai.operation.name` `execute_tool`, `gen_ai.tool.name`,
`mcp.method.name`, `mcp.session.id`, `error.type`) and add what simroute decided
(`simroute.route`, `simroute.policy`, `simroute.provenance`, `simroute.perturbation`,
`simroute.divergence` when known at the time). They are read from the call as
recorded: secrets are redacted there.

Parents and children. A call's span is a child of the context current when it is
decided: the front door's (fastmcp's server span of the MCP request, itself a child
of the agent's `params._meta.traceparent`; the HTTP request's `traceparent` header,
attached by `incoming`). The span is kept as `Pending.span`: while the real side runs
the engine makes it the current one (router/engine/trace_context.py), so what goes to
the real upstream (fastmcp's `_meta` injection, the HTTP front door's `inject`) carries the
same trace, with this span as the parent.

Only the OpenTelemetry API is imported here. Without `CallTracer` (tracing off, see
router/runtime/trace_export.py) the engine creates no span and these helpers do
nothing.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from calls import Call, Provenance, Route
from records.record import Record
from router.engine.addons import CallAddon
from router.engine.pending import Pending

# MCP requests the engine routes that are not tools/call (router/mcp/reads.py).
_MCP_METHODS = frozenset({"resources/read", "prompts/get"})


class CallTracer(CallAddon):
    """Opens each call's span when it is decided and closes it when it is recorded.
    `tracer`: an OpenTelemetry API tracer (the global provider's, set at start)."""

    def __init__(self, tracer: trace.Tracer) -> None:
        self.tracer = tracer

    async def decided(self, pending: Pending) -> None:
        pending.span = self._open(pending, start_time=None)

    async def finished(self, pending: Pending, record: Record) -> None:
        # A call refused before routing (`Engine.reject`, `remark`) was never decided: its
        # span covers it from its start. Kept once ended: the parent of the call's shadow work (shadow/shadow_span.py).
        span = pending.span or self._open(pending, start_time=int(pending.ts * 1e9))
        pending.span = span
        span.set_attributes(outcome_attributes(pending, record))
        error = error_type(record)
        if error is not None:
            span.set_attribute("error.type", error)
            span.set_status(Status(StatusCode.ERROR, record.served.text[:200]))
        span.end()

    def _open(self, pending: Pending, *, start_time: int | None) -> trace.Span:
        call = pending.stored_call
        return self.tracer.start_span(
            span_name(call), kind=SpanKind.INTERNAL, attributes=call_attributes(call, pending), start_time=start_time
        )


def span_name(call: Call) -> str:
    """`execute_tool {tool}` (GenAI convention); an HTTP request: `{METHOD} {host}`."""
    if call.channel == "http":
        return f"{call.tool} {call.server}"
    return f"execute_tool {call.tool}"


def call_attributes(call: Call, pending: Pending) -> dict[str, str | int]:
    """What is known when the call is decided (samplers see these)."""
    decision = pending.decision
    attributes: dict[str, str | int] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": call.tool,
        "simroute.channel": call.channel,
        "simroute.server": call.server,
        "simroute.session.id": call.session_id,
        "simroute.step": pending.step,
        "simroute.route": str(decision.route),
        "simroute.policy": decision.policy,
    }
    if call.channel == "mcp":
        attributes["mcp.method.name"] = call.tool if call.tool in _MCP_METHODS else "tools/call"
        attributes["mcp.session.id"] = call.session_id
    elif call.channel == "http":
        attributes["http.request.method"] = call.tool
        attributes["url.full"] = str(call.arguments.get("url", ""))
        attributes["server.address"] = call.server
    return attributes


def outcome_attributes(pending: Pending, record: Record) -> dict[str, str | int | float]:
    """What the call ended with, as recorded."""
    attributes: dict[str, str | int | float] = {
        # The decision again: a perturbation or a refusal can change it after `decided`.
        "simroute.route": str(record.decision.route),
        "simroute.policy": record.decision.policy,
        "simroute.provenance": str(record.served.provenance),
        "simroute.record_id": record.id,
        "simroute.status": record.status,
    }
    if record.perturbation is not None:
        attributes["simroute.perturbation"] = str(record.perturbation.get("kind", ""))
    if record.divergence is not None:
        attributes["simroute.divergence"] = record.divergence
    structured = record.served.structured
    if record.call.channel == "http" and isinstance(structured, dict) and isinstance(structured.get("status"), int):
        attributes["http.response.status_code"] = structured["status"]
    return attributes


def error_type(record: Record) -> str | None:
    """`error.type` of a call that ended in an error: `tool_error` for an error the
    tool (real, simulated or replayed) answered (the MCP convention), `denied` for a
    refusal, `simroute` for simroute's own failures (deadlines, a backend down)."""
    served = record.served
    if not served.is_error:
        return None
    if record.decision.route is Route.DENY:
        return "denied"
    return "simroute" if served.provenance is Provenance.NONE else "tool_error"


@contextlib.contextmanager
def incoming(tracer: CallTracer | None, headers: Mapping[str, str]) -> Iterator[None]:
    """The trace context a request's headers carry (`traceparent`, `tracestate`) as the
    current one while its call is decided, so the call's span continues the caller's
    trace. Nothing when tracing is off."""
    if tracer is None or "traceparent" not in headers:
        yield
        return
    token = otel_context.attach(propagate.extract(headers))
    try:
        yield
    finally:
        otel_context.detach(token)


def annotate_current(record: Record, *, method: str, target: str, tool_name: str | None = None) -> None:
    """Names the current span `{method} {target}` (the MCP convention for a request's
    server span) and adds the session, the tool and what simroute decided: the front
    front door's own span, fastmcp's server span of the MCP request, says the routing too."""
    span = trace.get_current_span()
    if not span.is_recording():
        return
    span.update_name(f"{method} {target}")
    attributes = {
        "mcp.method.name": method,
        "mcp.session.id": record.call.session_id,
        "simroute.route": str(record.decision.route),
        "simroute.policy": record.decision.policy,
        "simroute.provenance": str(record.served.provenance),
        "simroute.record_id": record.id,
    }
    if tool_name is not None:
        attributes["gen_ai.tool.name"] = tool_name
    span.set_attributes(attributes)
