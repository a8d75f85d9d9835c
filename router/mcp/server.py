"""Builds simroute's MCP server: one proxy provider per upstream, simroute's own
`tools/call` handler (and the routing middleware for what fastmcp dispatches),
simroute's own listings and pass-through requests, the relay
of the upstreams' notifications, the runtime (and any service beside the endpoint)
opened and closed with the server. It is built from the parts it routes with
(`McpParts`, router/runtime/parts.py), never the runtime that assembles them."""

from __future__ import annotations

import importlib.metadata
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any, Protocol

import mcp_types
from fastmcp import FastMCP
from fastmcp.server.dependencies import get_context
from mcp.shared.exceptions import MCPError
from mcp_types import METHOD_NOT_FOUND

from backends.mcp.fastmcp_private import low_level
from router.mcp.browser_tools import browser_tools
from router.mcp.call_handler import CallHandler
from router.mcp.identity import agent_session_id
from router.mcp.in_process import InProcessCalls, SimrouteServer
from router.mcp.listings import Listings
from router.mcp.local_tools import LocalTool
from router.mcp.middleware import RoutingMiddleware
from router.mcp.names import ToolNames
from router.mcp.passthrough import PassThrough
from router.mcp.provider import SnapshotProxyProvider
from router.mcp.relay import FrontRelay
from router.mcp.shell_tools import shell_tools
from router.mcp.tool_calls import ToolCalls
from router.mcp.virtual_provider import VirtualProvider
from router.runtime.parts import McpParts

INSTRUCTIONS = (
    "simroute routes each tool call to the real server, a world model, or recorded replays. "
    "Each result's _meta.simroute says which (provenance, route, policy, reason, record_id)."
)


class Service(Protocol):
    """Something served beside the MCP endpoint on the same runtime (the HTTP proxy)."""

    async def start(self) -> Any: ...

    async def aclose(self) -> None: ...


def build_server(parts: McpParts, *, services: Sequence[Service] = ()) -> SimrouteServer:
    """simroute speaks the session-based (handshake) protocol era on every transport:
    an agent session is an MCP session (`Mcp-Session-Id` over HTTP), and the upstream's
    server-to-client requests (sampling, elicitation, roots) need the session's
    back-channel. Clients negotiating automatically fall back to it.

    `services` start after the runtime and stop before it, in reverse order."""

    @asynccontextmanager
    async def lifespan(server: FastMCP) -> AsyncIterator[dict[str, Any]]:
        await parts.lifecycle.start()
        try:
            async with AsyncExitStack() as stack:
                for service in services:
                    await service.start()
                    stack.push_async_callback(service.aclose)
                yield {}
        finally:
            await parts.lifecycle.aclose()

    # Schemas as the upstreams list them: fastmcp would inline every `$ref` and drop `$defs`.
    server = SimrouteServer(
        "simroute", instructions=INSTRUCTIONS, lifespan=lifespan, version=simroute_version(), dereference_schemas=False
    )
    names = ToolNames(list(parts.config.upstreams))
    relay = FrontRelay(prefixed=names.prefixed)
    parts.upstreams.notices = relay  # what the upstreams send reaches their agent sessions
    virtual = parts.config.virtual_servers
    providers: dict[str, SnapshotProxyProvider | VirtualProvider] = {
        upstream: VirtualProvider(upstream, virtual[upstream])
        if upstream in virtual
        else SnapshotProxyProvider(
            _upstream_client_factory(parts, upstream, relay),
            server=upstream,
            store=parts.store,
            list_timeout_s=parts.config.list_timeout_s,
            on_tools=parts.tool_catalog.update,
            prefer_snapshot=lambda: _serving_an_episode(parts),
            pins=parts.pins,
        )
        for upstream in names.servers
    }
    for upstream, provider in providers.items():
        server.add_provider(provider, namespace=upstream if names.prefixed else "")
    parts.upstreams.on_list_changed.append(lambda upstream, kind: providers[upstream].forget(kind))
    # A server that says its tools changed is listed again (and judged by the pins) before its next call.
    parts.upstreams.on_list_changed.append(
        lambda upstream, kind: parts.pins.mark_stale(upstream) if kind == "tools" else None
    )
    parts.pins.on_stale.append(lambda upstream: providers[upstream].forget("tools") if upstream in providers else None)
    local = {entry.tool.name: entry for entry in local_tools(parts)}
    for entry in local.values():
        server.add_tool(entry.tool)
    passthrough = PassThrough(parts, names, providers, relay)
    calls = ToolCalls(parts, names, providers, local, relay=relay)
    server.add_middleware(passthrough)
    server.add_middleware(RoutingMiddleware(parts, names, calls))
    passthrough.register(server)
    handler = CallHandler(server, calls)
    handler.register()
    server.in_process = InProcessCalls(server, calls, handler)  # an episode's steps (router/episodes/steps.py)
    Listings(parts, names, providers, local).register(server)
    _advertise_handshake_era_only(server)
    return server


def simroute_version() -> str:
    """simroute's own version (pyproject's), as `serverInfo` says it."""
    try:
        return importlib.metadata.version("simroute")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def local_tools(parts: McpParts) -> list[LocalTool]:
    """simroute's own tools, per enabled channel."""
    tools: list[LocalTool] = []
    if parts.shell is not None:
        tools += shell_tools(parts.shell, parts.config.shell)
    if parts.browser is not None:
        tools += browser_tools(parts.browser)
    return tools


def _upstream_client_factory(parts: McpParts, upstream: str, relay: FrontRelay):
    async def client_for_current_session():
        ctx = get_context()
        session_id = agent_session_id(ctx)
        try:
            relay.seen(session_id, ctx.session)  # where the upstream's notifications go
        except RuntimeError:  # an episode's step taken in-process has no MCP client to tell
            pass
        return await parts.upstreams.client_for(session_id, upstream)

    return client_for_current_session


def _serving_an_episode(parts: McpParts) -> bool:
    """Whether the current request is an episode's: its listings come from the stored
    snapshot when there is one, so a simulated episode starts no upstream process."""
    session = parts.sessions.find(agent_session_id(get_context()))
    return session is not None and session.is_episode


def _advertise_handshake_era_only(server: FastMCP) -> None:
    # Refusing `server/discover` is how a session-based server tells an
    # auto-negotiating client to use the initialize handshake instead. An answer,
    # even one naming only handshake versions, would lock a stdio connection to
    # the stateless era.
    async def discover(ctx: Any, params: Any) -> Any:
        raise MCPError(METHOD_NOT_FOUND, "simroute serves the session-based protocol era: use initialize")

    low_level(server).add_request_handler("server/discover", mcp_types.RequestParams, discover)
