"""Lists a virtual MCP server's tools (backends/mcp/virtual.py) as a real upstream's
are listed: names, descriptions, input and output schemas, annotations.

The routing middleware holds it where it holds a proxy provider, and routes every call
of its tools through the engine, which never sends them to a real side
(policies/virtual.py). Its tools cannot run: if anything ever reached one, it raises,
and the middleware answers with simroute's own error (provenance `none`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import mcp_types
from fastmcp.server.providers import Provider
from fastmcp.tools.base import Tool, ToolResult

from backends.mcp.upstream import UpstreamError
from backends.mcp.virtual import VirtualServer
from router.mcp.provider import Page


class DeclaredTool(Tool):
    """A tool with a definition and no implementation: the engine answers its calls."""

    server: str = ""

    async def run(self, arguments: dict[str, Any], context: Any = None) -> ToolResult:
        raise UpstreamError(f"{self.server!r} is a virtual server: it has no real side to call {self.name!r} on")


class VirtualProvider(Provider):
    """The declared tools of one virtual server (no upstream, no listing deadline)."""

    def __init__(self, server: str, spec: VirtualServer) -> None:
        super().__init__()
        self.server = server
        self.spec = spec
        self.listing_error: str | None = None  # a declaration is always listed
        self.schema_changed_from: str | None = None  # a declaration changes only with the config
        self._tools = {
            definition["name"]: DeclaredTool(
                server=server,
                name=definition["name"],
                title=definition.get("title"),
                description=definition.get("description") or None,
                parameters=definition["inputSchema"],
                output_schema=definition.get("outputSchema"),
                annotations=mcp_types.ToolAnnotations.model_validate(definition["annotations"])
                if definition.get("annotations")
                else None,
            )
            for definition in spec.definitions()
        }

    async def _list_tools(self) -> Sequence[Tool]:
        return list(self._tools.values())

    async def _get_tool(self, name: str, version: Any = None) -> Tool | None:
        return self._tools.get(name)

    def cached_tool(self, name: str) -> Tool | None:
        return self._tools.get(name)

    async def page(self, kind: str, cursor: str | None, meta: dict[str, Any] | None = None) -> Page:
        """Its listing (router/mcp/listings.py): the declared tools as declared, in one page."""
        return Page(self.spec.definitions() if kind == "tools" else [])

    def forget(self, kind: str) -> None:
        """Nothing to forget: a virtual server's listing is its declaration."""

    async def relist(self) -> None:
        """Nothing to list again: the declaration changes only with the config."""

    def snapshot(self) -> list[dict]:
        return self.spec.definitions()
