"""An episode's step taken in process (router/episodes): the wire's `tools/call` work
(router/mcp/tool_calls.py) on the episode's session, its real side reached as the
wire's handler reaches it (router/mcp/call_handler.py), answered with the call's
record: the episode's host reads route, provenance and record id from it as values,
never back from the result's `_meta`.

No fastmcp middleware runs on such a step (none runs on the wire's `tools/call`
either); fastmcp's request context is opened without a client session, so the tools
and upstream clients that look it up find the episode's session
(`EPISODE_SESSION`, set by the host) and no client to relay to.
"""

from __future__ import annotations

from typing import Any

from fastmcp import FastMCP
from fastmcp.server.context import Context

from router.mcp.call_handler import CallHandler
from router.mcp.tool_calls import Routed, ToolCalls


class InProcessCalls:
    def __init__(self, server: FastMCP, calls: ToolCalls, handler: CallHandler) -> None:
        self.server = server
        self.calls = calls
        self.handler = handler

    async def call(self, session_id: str, name: str, arguments: dict[str, Any]) -> Routed:
        """`tools/call` of `name` on the episode session `session_id`."""
        async with Context(fastmcp=self.server) as context:
            return await self.calls.step(
                context, session_id, name, arguments, lambda: self.handler.send(context, name, arguments)
            )


class SimrouteServer(FastMCP):
    """simroute's MCP server (router/mcp/server.py), with the way in for an episode's
    steps taken in process."""

    in_process: InProcessCalls
