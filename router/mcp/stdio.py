"""Serving simroute's MCP server over stdio in the session-based protocol era.

The SDK's stdio runner lets the client's first request pick the era, and a
2026-era probe would lock the connection stateless (no back-channel for the
upstream's elicitation or sampling requests). This runner serves the handshake
loop only; the probe is refused (see server.py) and the client falls back to
`initialize`. stdout carries only protocol messages: the SDK's stdio server
points fd 1 at stderr while serving.
"""

from __future__ import annotations

from fastmcp import FastMCP
from fastmcp.server.context import reset_transport, set_transport
from mcp.server.runner import serve_loop
from mcp.server.stdio import stdio_server


async def serve_stdio(server: FastMCP) -> None:
    token = set_transport("stdio")
    try:
        async with server._lifespan_manager():
            async with stdio_server() as (read_stream, write_stream):
                low_level = server._mcp_server
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
