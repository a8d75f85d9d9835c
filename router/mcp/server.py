"""Builds simroute's MCP server: one proxy provider per upstream, the routing
middleware in front, the runtime opened and closed with the server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import mcp_types
from fastmcp import FastMCP
from fastmcp.server.dependencies import get_context
from fastmcp.server.providers.proxy import ProxyProvider
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from router.app import Runtime
from router.mcp.identity import agent_session_id
from router.mcp.middleware import RoutingMiddleware, ToolNames

INSTRUCTIONS = (
    "simroute routes each tool call to the real server, a world model, or recorded replays. "
    "Each result's _meta.simroute says which (provenance, route, policy, reason, record_id)."
)


def build_server(runtime: Runtime, *, session_based: bool = False) -> FastMCP:
    """`session_based=True` (the HTTP front) keeps clients on the handshake era, whose
    `Mcp-Session-Id` identifies the agent session; stateless 2026 clients fall back to it."""

    @asynccontextmanager
    async def lifespan(server: FastMCP) -> AsyncIterator[dict[str, Any]]:
        await runtime.start()
        try:
            yield {}
        finally:
            await runtime.aclose()

    server = FastMCP("simroute", instructions=INSTRUCTIONS, lifespan=lifespan)
    names = ToolNames(list(runtime.config.upstreams))
    for upstream in names.servers:
        server.add_provider(
            ProxyProvider(_upstream_client_factory(runtime, upstream)),
            namespace=upstream if names.prefixed else "",
        )
    server.add_middleware(RoutingMiddleware(runtime, names))
    if session_based:
        _advertise_handshake_era_only(server)
    return server


def _upstream_client_factory(runtime: Runtime, upstream: str):
    async def client_for_current_session():
        return await runtime.upstreams.client_for(agent_session_id(get_context()), upstream)

    return client_for_current_session


def _advertise_handshake_era_only(server: FastMCP) -> None:
    # A `server/discover` answer naming no modern version is how a stateful server
    # tells an auto-negotiating client to use the initialize handshake instead.
    low_level = server._mcp_server

    async def discover(ctx: Any, params: Any) -> mcp_types.DiscoverResult:
        return mcp_types.DiscoverResult(
            supported_versions=list(HANDSHAKE_PROTOCOL_VERSIONS),
            capabilities=low_level.get_capabilities(protocol_version=ctx.protocol_version),
            instructions=low_level.instructions,
        )

    low_level.add_request_handler("server/discover", mcp_types.RequestParams, discover)
