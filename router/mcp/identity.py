"""Which agent session a request belongs to.

- An `X-Simroute-Session` HTTP header names it explicitly (any transport era).
- Over stdio, one simroute process serves one agent: one session per process.
- Over streamable HTTP, the MCP session (`Mcp-Session-Id`).

With tokens, the session lives in the caller's token's namespace (see
`router/mcp/http_guard.py`): another token naming the same session gets its own.
"""

from __future__ import annotations

import uuid

from fastmcp.server.context import Context
from fastmcp.server.dependencies import get_http_headers, get_http_request

from router.auth import namespaced
from router.mcp.http_guard import TOKEN_SCOPE_KEY

SESSION_HEADER = "x-simroute-session"
PROCESS_SESSION_ID = f"stdio-{uuid.uuid4().hex[:12]}"


def agent_session_id(ctx: Context) -> str:
    if ctx.transport == "stdio":
        return PROCESS_SESSION_ID
    explicit = get_http_headers(include={SESSION_HEADER}).get(SESSION_HEADER)
    token = get_http_request().scope.get("state", {}).get(TOKEN_SCOPE_KEY)
    return namespaced(token, explicit or ctx.session_id)
