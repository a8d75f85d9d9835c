"""Which agent session a request belongs to.

- An `X-Simroute-Session` HTTP header names it explicitly (any transport era).
- Over stdio, one simroute process serves one agent: one session per process.
- Over streamable HTTP, the MCP session (`Mcp-Session-Id`).
"""

from __future__ import annotations

import uuid

from fastmcp.server.context import Context
from fastmcp.server.dependencies import get_http_headers

SESSION_HEADER = "x-simroute-session"
PROCESS_SESSION_ID = f"stdio-{uuid.uuid4().hex[:12]}"


def agent_session_id(ctx: Context) -> str:
    if ctx.transport == "stdio":
        return PROCESS_SESSION_ID
    explicit = get_http_headers(include={SESSION_HEADER}).get(SESSION_HEADER)
    if explicit:
        return explicit
    return ctx.session_id
