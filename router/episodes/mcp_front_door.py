"""MCP per episode: `/mcp/e/{episode_id}` is simroute's MCP endpoint with the episode
as the caller (verifiers' toolsets, rLLM and Agent Lightning harnesses put the
rollout's identity in the URL). The request goes to the same streamable HTTP
endpoint as `/mcp`, its scope naming the episode's session, which beats any header;
an episode the caller's token does not hold is a 404, an ended one a 409."""

from __future__ import annotations

import json
from typing import Any

from router.episodes.host import EpisodeError, EpisodeHost
from router.episodes.rest import token_in
from router.mcp.identity import EPISODE_SCOPE_KEY

MCP_PATH = "/mcp"


class EpisodeMcpEndpoint:
    """An ASGI endpoint for `/mcp/e/{episode_id}`."""

    def __init__(self, host: EpisodeHost) -> None:
        self.host = host

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        episode_id = scope.get("path_params", {}).get("episode_id", "")
        try:
            episode = await self.host.lookup(token_in(scope), episode_id)
            if episode.ended is not None:
                raise EpisodeError(f"simroute: episode {episode_id!r} has ended ({episode.ended})", 409)
        except EpisodeError as exc:
            await _refuse(send, exc.status, str(exc))
            return
        inner = {**scope, "path": MCP_PATH, "raw_path": MCP_PATH.encode(), "state": {**scope.get("state", {})}}
        inner["state"][EPISODE_SCOPE_KEY] = episode.session_id
        await scope["app"](inner, receive, send)


async def _refuse(send: Any, status: int, message: str) -> None:
    body = json.dumps({"error": message, "status": status}).encode()
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": body})
