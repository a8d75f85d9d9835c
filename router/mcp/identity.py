"""Which agent session a request belongs to.

- An `X-Simroute-Session` HTTP header names it explicitly (any transport era).
- Over stdio, one simroute process serves one agent: one session per process.
- Over streamable HTTP, the MCP session (`Mcp-Session-Id`); its close (`DELETE`) closes
  that agent session, with its upstreams and sandboxes (`agent_session_closed_with`).
- An episode's session: its MCP URL (`/mcp/e/{id}`, which puts it in the request scope),
  or, for a step taken in-process (`router/episodes`), the `EPISODE_SESSION` context
  variable. Both beat the header: an episode's calls cannot be steered elsewhere.

With tokens, the session lives in the caller's token's namespace (see
`router/mcp/http_guard.py`): another token naming the same session gets its own.
"""

from __future__ import annotations

import uuid
from contextvars import ContextVar
from typing import Any

from fastmcp.server.context import Context
from fastmcp.server.dependencies import get_http_headers, get_http_request

from router.auth import namespaced

SESSION_HEADER = "x-simroute-session"
TOKEN_SCOPE_KEY = "simroute_token"  # request.state key holding the caller's token name (router/mcp/http_guard.py)
PROCESS_SESSION_ID = f"stdio-{uuid.uuid4().hex[:12]}"
EPISODE_SCOPE_KEY = "simroute_episode_session"  # request.state key: the episode an /mcp/e/{id} request is for
# The episode session of a step run in-process (no MCP transport): set by router/episodes.
EPISODE_SESSION: ContextVar[str | None] = ContextVar("simroute_episode_session", default=None)


def agent_session_id(ctx: Context) -> str:
    in_process = EPISODE_SESSION.get()
    if in_process is not None:
        return in_process
    if ctx.transport == "stdio":
        return PROCESS_SESSION_ID
    state = get_http_request().scope.get("state", {})
    episode = state.get(EPISODE_SCOPE_KEY)
    if episode is not None:  # already in its token's namespace
        return episode
    explicit = get_http_headers(include={SESSION_HEADER}).get(SESSION_HEADER)
    return namespaced(state.get(TOKEN_SCOPE_KEY), explicit or ctx.session_id)


def agent_session_closed_with(scope: Any, mcp_session_id: str) -> str | None:
    """The agent session an MCP session's close (`DELETE /mcp`) ends: the one named after
    that MCP session. A session the header names spans connections (it lives on to its
    idle TTL), and an episode's ends with its episode: neither ends here."""
    headers = {key.lower() for key, _ in scope.get("headers", ())}
    if SESSION_HEADER.encode() in headers or scope.get("path", "").rstrip("/") != "/mcp":
        return None
    return namespaced(scope.get("state", {}).get(TOKEN_SCOPE_KEY), mcp_session_id)
