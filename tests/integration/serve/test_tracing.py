"""Tracing end to end: `simroute serve` launched as a user launches it, with the standard
OpenTelemetry variables pointing at an OTLP/HTTP receiver written here (tests/kit/otlp.py).
An agent's `traceparent` (MCP: `params._meta`; HTTP: the header) reaches the real
upstream in the same trace, and the spans arrive with simroute's attributes."""

from __future__ import annotations

import json
import secrets
import sys
from pathlib import Path

import httpx2 as httpx
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from kit.launch import free_port, meta_of, write_config
from kit.otlp import OtlpReceiver, tracing_env
from kit.serve import serving

pytestmark = pytest.mark.integration

# An upstream MCP server that answers with the `_meta` its request arrived with.
META_SERVER = """
import json
from fastmcp import Context, FastMCP

mcp = FastMCP("meta")


@mcp.tool
def show_meta(ctx: Context) -> str:
    \"\"\"The request's _meta, as this server received it.\"\"\"
    meta = ctx.request_context.meta if ctx.request_context is not None else None
    return json.dumps(dict(meta or {}))


@mcp.tool
def delete_everything() -> str:
    \"\"\"Never reached: a rule denies it.\"\"\"
    return "deleted"


mcp.run(show_banner=False)
"""


def traceparent() -> tuple[str, str, str]:
    """(header value, trace id, span id) of a sampled W3C traceparent, as an agent sends it."""
    trace_id, span_id = secrets.token_hex(16), secrets.token_hex(8)
    return f"00-{trace_id}-{span_id}-01", trace_id, span_id


def parts_of(value: str) -> tuple[str, str]:
    """(trace id, parent span id) of a traceparent header."""
    _, trace_id, span_id, _ = value.split("-")
    return trace_id, span_id


def meta_config(tmp_path: Path) -> Path:
    server = tmp_path / "meta_server.py"
    server.write_text(META_SERVER)
    deny = {"name": "no-deletes", "match": {"tool": "delete_everything"}, "route": "deny", "reason": "not in tests"}
    return write_config(tmp_path, mcpServers={"meta": {"command": sys.executable, "args": [str(server)]}}, rules=[deny])


async def call_with_trace(port: int, tool: str, header: str):
    async with Client(StreamableHttpTransport(f"http://127.0.0.1:{port}/mcp"), timeout=60) as client:
        return await client.call_tool(tool, {}, meta={"traceparent": header}, raise_on_error=False)


async def test_mcp_call_continues_the_agents_trace_to_the_upstream_and_exports_its_spans(tmp_path):
    config = meta_config(tmp_path)
    header, trace_id, agent_span = traceparent()
    denied_header, denied_trace, _ = traceparent()
    with OtlpReceiver() as receiver, serving(config, tmp_path / "serve.log", **tracing_env(receiver)) as port:
        result = await call_with_trace(port, "show_meta", header)
        denied = await call_with_trace(port, "delete_everything", denied_header)
        routed = receiver.wait_for(
            lambda s: s.attributes.get("gen_ai.operation.name") == "execute_tool" and s.trace_id == trace_id
        )
        refused = receiver.wait_for(
            lambda s: s.attributes.get("gen_ai.operation.name") == "execute_tool" and s.trace_id == denied_trace
        )
        server_spans = receiver.wait_for(lambda s: s.trace_id == trace_id and s.parent_span_id == agent_span)

    # The upstream received the agent's trace, its parent now a span of simroute's.
    received = json.loads(result.content[0].text)
    upstream_trace, upstream_parent = parts_of(received["traceparent"])
    assert upstream_trace == trace_id and upstream_parent != agent_span

    # The routed call's span: MCP and GenAI conventions, and what simroute decided.
    [span] = routed
    assert span.name == "execute_tool show_meta" and span.service == "simroute-test"
    attributes = span.attributes
    assert attributes["gen_ai.tool.name"] == "show_meta" and attributes["mcp.method.name"] == "tools/call"
    assert attributes["simroute.route"] == "real" and attributes["simroute.provenance"] == "real"
    assert (
        attributes["simroute.policy"] == meta_of(result)["policy"]
        and attributes["simroute.record_id"] == meta_of(result)["record_id"]
    )
    assert attributes["mcp.session.id"] and "error.type" not in attributes

    # The chain: agent -> the MCP front door's server span -> the call's span -> ... -> the upstream.
    [front] = server_spans
    assert (
        front.kind == 2 and front.name == "tools/call show_meta" and front.attributes["mcp.method.name"] == "tools/call"
    )
    assert (
        front.attributes["gen_ai.tool.name"] == "show_meta"
        and front.attributes["mcp.session.id"] == attributes["mcp.session.id"]
    )
    assert front.attributes["simroute.route"] == "real" and front.attributes["simroute.provenance"] == "real"
    assert span.parent_span_id == front.span_id
    by_id = {s.span_id: s for s in receiver.spans if s.trace_id == trace_id}
    ancestors, hop = [], by_id.get(upstream_parent)
    while hop is not None:
        ancestors.append(hop.span_id)
        hop = by_id.get(hop.parent_span_id)
    assert span.span_id in ancestors and front.span_id in ancestors

    # A denied call: its span says so, with the error type.
    assert denied.is_error and meta_of(denied)["route"] == "deny"
    [refusal] = refused
    assert refusal.name == "execute_tool delete_everything"
    assert refusal.attributes["simroute.route"] == "deny" and refusal.attributes["simroute.provenance"] == "none"
    assert refusal.attributes["simroute.policy"] == "rules:no-deletes" and refusal.attributes["error.type"] == "denied"


async def test_with_tracing_off_the_agents_traceparent_still_reaches_the_upstream(tmp_path):
    header, trace_id, agent_span = traceparent()
    with serving(meta_config(tmp_path), tmp_path / "serve.log") as port:
        result = await call_with_trace(port, "show_meta", header)
    assert json.loads(result.content[0].text)["traceparent"] == header


def test_http_request_continues_its_trace_to_the_real_upstream(tmp_path, upstream):
    config = write_config(tmp_path)
    header, trace_id, agent_span = traceparent()
    http_port = free_port()
    with (
        OtlpReceiver() as receiver,
        serving(config, tmp_path / "serve.log", http_port=http_port, **tracing_env(receiver)),
    ):
        with httpx.Client(proxy=f"http://127.0.0.1:{http_port}", timeout=30) as client:
            answer = client.get(f"{upstream}/echo", headers={"traceparent": header, "X-Simroute-Session": "traced"})
        spans = receiver.wait_for(lambda s: s.trace_id == trace_id and s.attributes.get("simroute.channel") == "http")

    assert answer.status_code == 200 and answer.headers["x-simroute-route"] == "real"
    upstream_trace, upstream_parent = parts_of(answer.json()["headers"]["traceparent"])
    [span] = spans
    assert upstream_trace == trace_id and upstream_parent == span.span_id and span.parent_span_id == agent_span
    assert span.name == f"GET {upstream.removeprefix('http://')}"
    attributes = span.attributes
    assert attributes["http.request.method"] == "GET" and attributes["http.response.status_code"] == 200
    assert attributes["simroute.route"] == "real" and attributes["simroute.provenance"] == "real"
    assert (
        attributes["gen_ai.operation.name"] == "execute_tool"
        and attributes["simroute.record_id"] == answer.headers["x-simroute-record"]
    )
