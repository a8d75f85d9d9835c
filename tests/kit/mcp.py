"""Calling a tool through a real MCP client the way the integration tests read the answer."""

from __future__ import annotations

from typing import Any


async def call_tool(client, tool: str, /, **arguments) -> tuple[Any, str, dict]:
    """Calls `tool`; an error answer is returned, not raised. Gives the result, its
    first text block and its structured content (empty when there is none)."""
    result = await client.call_tool(tool, arguments, raise_on_error=False)
    return result, result.content[0].text, result.structured_content or {}
