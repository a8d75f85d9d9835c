"""The wire's `tools/call`: simroute's own handler on the SDK server, in place of
fastmcp's.

fastmcp's handler takes every call through its middleware chain, resolves the tool
again through every provider with its transforms and visibility rules, opens a span of
its own and wraps the result twice (its `ToolResult`, then the wire's); on the real
route that was most of what simroute added over a stock proxy. Here a call goes
straight to router/mcp/tool_calls.py, which keeps everything a call gets (pins,
schema checks, idempotency, the engine's decision, addons and records), and an
upstream's tool is called over the session's warm upstream, its result relayed as the
wire's `CallToolResult`. simroute's own tools and a virtual server's still run as
fastmcp's tools (`FastMCP.call_tool` without middleware).

fastmcp middleware added to simroute's server therefore does not see a wire
`tools/call` (it still sees an episode's step taken in-process, and every other
request). fastmcp's server span of the request is still opened at its root dispatch,
and named and annotated by simroute (router/addons/tracing.py). Errors are answered as
fastmcp answers them: an unknown tool, and a tool's own error, as an error result.
"""

from __future__ import annotations

from typing import Any

import mcp_types
from fastmcp import FastMCP
from fastmcp.exceptions import FastMCPError, NotFoundError, ToolError
from fastmcp.server.context import Context
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolRequestParams

from backends.mcp.fastmcp_private import low_level
from router.mcp.provider import SnapshotProxyProvider
from router.mcp.results import call_result_of
from router.mcp.tool_calls import Target, ToolCalls
from router.mcp.upstream_tool import call_upstream


class CallHandler:
    def __init__(self, server: FastMCP, calls: ToolCalls) -> None:
        self.server = server
        self.calls = calls

    def register(self) -> None:
        low_level(self.server).add_request_handler("tools/call", CallToolRequestParams, self.handle)

    async def handle(self, ctx: Any, params: CallToolRequestParams) -> mcp_types.CallToolResult:
        name, arguments = params.name, dict(params.arguments or {})
        async with Context(fastmcp=self.server, session=ctx.session) as context:
            try:
                return await self.calls.call(context, name, arguments, lambda: self.send(context, name, arguments))
            except NotFoundError:
                return _error(f"Unknown tool: {name!r}")
            except FastMCPError as exc:  # a tool-visible error is an error result, never a protocol error
                return _error(str(exc))

    async def send(self, context: Context, name: str, arguments: dict[str, Any]) -> mcp_types.CallToolResult:
        """The real side: the upstream's tool over the session's warm upstream, else
        fastmcp's tool. A failure is the tool's error, as fastmcp reports it."""
        target: Target = self.calls.target(name)
        provider = self.calls.providers.get(target.server) if target.local is None and target.known else None
        if not isinstance(provider, SnapshotProxyProvider):
            return call_result_of(await self.server.call_tool(name, arguments, run_middleware=False))
        try:
            client = await provider.client_factory()  # type: ignore[misc]  # simroute's factories are async
            return await call_upstream(client, target.tool, arguments, context)
        except MCPError as exc:
            if exc.error.code == mcp_types.MISSING_REQUIRED_CLIENT_CAPABILITY:
                raise
            raise ToolError(f"Error calling tool {name!r}: {exc}") from exc
        except (
            Exception
        ) as exc:  # the tool's boundary, as fastmcp's: the call's error (router/mcp/tool_calls.py's real_failure)
            raise ToolError(f"Error calling tool {name!r}: {exc}") from exc


def _error(text: str) -> mcp_types.CallToolResult:
    return mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text=text)], is_error=True)
