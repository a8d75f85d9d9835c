"""Serving simroute's MCP server over stdio in the session-based protocol era.

The SDK's stdio runner lets the client's first request pick the era, and a
2026-era probe would lock the connection stateless (no back-channel for the
upstream's elicitation or sampling requests). This runner serves the handshake
loop only; the probe is refused (see server.py) and the client falls back to
`initialize`. stdout carries only protocol messages: fd 1 points at stderr while
serving. The wire is read and written by the event loop's own pipes where it can be
(router/mcp/stdio_pipes.py), else by the SDK's threads.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastmcp import FastMCP
from fastmcp.server.context import reset_transport, set_transport
from mcp.server.runner import serve_loop
from mcp.server.stdio import stdio_server

from backends.mcp.fastmcp_private import lifespan
from backends.mcp.fastmcp_private import low_level as sdk_server
from router.mcp.stdio_pipes import pipes_available, stdio_pipes


async def serve_stdio(server: FastMCP) -> None:
    token = set_transport("stdio")
    try:
        async with lifespan(server):
            async with _wire() as (read_stream, write_stream):
                low_level = sdk_server(server)
                async with low_level.lifespan(low_level) as lifespan_state:
                    try:
                        await serve_loop(
                            low_level,
                            read_stream,
                            write_stream,
                            lifespan_state=lifespan_state,
                            init_options=low_level.create_initialization_options(),
                        )
                    finally:
                        await write_stream.aclose()
    finally:
        reset_transport(token)


@asynccontextmanager
async def _wire() -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's message streams over stdin and stdout."""
    if not pipes_available():
        async with stdio_server() as streams:
            yield streams
        return
    async with stdio_pipes() as (lines, writer), stdio_server(lines, writer) as streams:
        yield streams
