"""An upstream's tool as its server listed it, called with what the agent sent.

fastmcp's proxy tool renders its definition again (a `title` made up from the name,
`_meta.fastmcp.tags`) and calls the upstream with a progress handler of its own, so
every call carries a `progressToken` the agent never sent. This one keeps the
definition the server listed (renamed only when several servers are prefixed) and
sends the agent's own `_meta` (its `progressToken` when it asked for progress): the
upstream's progress and log messages reach the agent through the front door's relay
(router/mcp/relay.py).
"""

from __future__ import annotations

from typing import Any

import mcp_types
from fastmcp.client.client import Client
from fastmcp.server.dependencies import get_context
from fastmcp.server.providers.proxy import ClientFactoryT, ProxyTool
from fastmcp.tools.base import ToolResult

from backends.mcp.fastmcp_private import monitored, request_meta, stash_request_context


class UpstreamTool(ProxyTool):
    _listed: dict[str, Any] | None = None  # the definition as the upstream listed it (as pinned, if it changed)

    @classmethod
    def of_definition(cls, client_factory: ClientFactoryT, definition: dict[str, Any]) -> UpstreamTool:
        tool = cls.from_mcp_tool(client_factory, mcp_types.Tool.model_validate(definition))
        assert isinstance(tool, UpstreamTool)  # fastmcp's factory builds `cls` (typed as its own class)
        tool._listed = definition
        return tool

    def to_mcp_tool(self, **overrides: Any) -> mcp_types.Tool:
        if self._listed is None:
            return super().to_mcp_tool(**overrides)
        return mcp_types.Tool.model_validate({**self._listed, "name": overrides.get("name", self.name)})

    async def run(self, arguments: dict[str, Any], context: Any = None) -> ToolResult:
        result = await call_upstream(
            await self._get_client(), self._backend_name or self.name, arguments, context or get_context()
        )
        return ToolResult(
            content=result.content,
            structured_content=result.structured_content,
            meta=result.meta,
            is_error=result.is_error,
        )


async def call_upstream(client: Client, tool: str, arguments: dict[str, Any], ctx: Any) -> mcp_types.CallToolResult:
    """`tools/call` of the upstream's `tool` over the agent session's warm `client`, with
    the agent's own `_meta` (`ctx`: its current request)."""
    async with client:
        stash_request_context(client, ctx)  # the upstream's sampling, elicitation and roots requests reach this agent
        result = await monitored(client, client.session.call_tool(tool, arguments, meta=request_meta(ctx)))
    assert isinstance(result, mcp_types.CallToolResult)  # a handshake-era session answers nothing else
    return result
