"""Who may talk to the MCP endpoint over HTTP.

- Host and Origin are always checked (fastmcp's `HostOriginGuardMiddleware`, strict):
  loopback names by default, `service.allowed_hosts` / `allowed_origins` beyond.
  A DNS-rebinding page gets 421 (its Host) or 403 (its Origin).
- With tokens (`SIMROUTE_TOKEN`, `service.tokens`), `Authorization: Bearer TOKEN`
  is required (401 otherwise, recorded); the token's name travels in the request
  scope, and `identity.agent_session_id` puts the session in its namespace. An MCP
  session (`Mcp-Session-Id`) belongs to the token that opened it.
"""

from __future__ import annotations

import functools
import json
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from starlette.middleware import Middleware

from calls import Call, Session
from router.auth import Tokens, check_bind
from router.engine.sessions import SessionRefusedError
from router.mcp.identity import TOKEN_SCOPE_KEY, agent_session_closed_with
from router.mcp.replica_header import ReplicaHeader
from router.mcp.session_close import SessionCloseGuard

if TYPE_CHECKING:
    from router.runtime.parts import McpParts

# The dashboard and /metrics check tokens themselves (a browser's cookie counts there).
OWN_GUARD_PATHS = ("/dashboard", "/metrics")
REFUSED_SESSION = "mcp-unauthenticated"
_MAX_OWNED_SESSIONS = 65536


class TokenGuard:
    """ASGI middleware: a valid bearer token, and the MCP session it opened, or 401/403."""

    def __init__(self, app: Any, *, tokens: Tokens, parts: McpParts) -> None:
        self.app = app
        self.tokens = tokens
        self.parts = parts
        self._owners: OrderedDict[str, str] = OrderedDict()  # Mcp-Session-Id -> token name

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket") or scope.get("path", "").startswith(OWN_GUARD_PATHS):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", ())}
        name = self.tokens.bearer(headers.get("authorization"))
        if scope["type"] == "websocket":  # an episode's OpenEnv session (/ws): refused before it is accepted
            if name is None:
                await self._record_refusal(scope, 401, "simroute: authentication required: Authorization: Bearer TOKEN")
                await send({"type": "websocket.close", "code": 1008, "reason": "authentication required"})
                return
            scope.setdefault("state", {})[TOKEN_SCOPE_KEY] = name
            await self.app(scope, receive, send)
            return
        if name is None:
            reason = "simroute: authentication required: Authorization: Bearer TOKEN (SIMROUTE_TOKEN or service.tokens)"
            await self._refuse(scope, send, 401, reason, {"www-authenticate": 'Bearer realm="simroute"'})
            return
        mcp_session = headers.get("mcp-session-id")
        if mcp_session is not None and self._owners.get(mcp_session, name) != name:
            await self._refuse(scope, send, 403, "simroute: this MCP session belongs to another token", {})
            return
        scope.setdefault("state", {})[TOKEN_SCOPE_KEY] = name

        async def send_recording_owner(message: Any) -> None:
            if message["type"] == "http.response.start":
                for key, value in message.get("headers", ()):
                    if key.lower() == b"mcp-session-id":
                        self._own(value.decode("latin-1"), name)
            await send(message)

        await self.app(scope, receive, send_recording_owner)

    def _own(self, mcp_session: str, name: str) -> None:
        self._owners[mcp_session] = name
        self._owners.move_to_end(mcp_session)
        while len(self._owners) > _MAX_OWNED_SESSIONS:
            self._owners.popitem(last=False)

    async def _refuse(self, scope: Any, send: Any, status: int, reason: str, headers: dict[str, str]) -> None:
        record_id = await self._record_refusal(scope, status, reason)
        body = json.dumps({"error": reason, "status": status, "record_id": record_id}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    *((k.encode(), v.encode()) for k, v in headers.items()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    async def _record_refusal(self, scope: Any, status: int, reason: str) -> str:
        """Every refusal of the MCP endpoint is recorded here."""
        try:
            session = self.parts.sessions.get(REFUSED_SESSION)
        except SessionRefusedError:
            session = Session(id=REFUSED_SESSION)  # past the session cap: a transient one carries the record
        call = Call(
            "mcp",
            "simroute",
            "HTTP",
            {"method": scope.get("method"), "path": scope.get("path"), "status": status},
            session.id,
        )
        return (await self.parts.engine.reject(call, session, policy="mcp-auth", reason=reason)).record.id


async def _end_agent_session(parts: McpParts, scope: Any, mcp_session_id: str) -> None:
    """An MCP client closed its session: its agent session closes now, with its upstream
    servers, sandbox and browser (else they stayed open to the idle TTL, and a client
    opening a session per task filled `sessions.max_open`)."""
    agent = agent_session_closed_with(scope, mcp_session_id)
    if agent is not None and parts.sessions.find(agent) is not None:
        await parts.sessions.close(agent, "closed")


def http_run_options(parts: McpParts, host: str) -> dict[str, Any]:
    """`FastMCP.run(transport="http", ...)` options: the Host/Origin guard always, the
    token guard when tokens are configured. Raises AuthConfigError for a network bind
    without a token."""
    check_bind(host, parts.tokens, what="the MCP endpoint")
    service = parts.config.service
    # Outermost: every answer names the replica that served it, refusals included.
    middleware = [Middleware(ReplicaHeader)]
    if parts.tokens.enabled:
        middleware.append(Middleware(TokenGuard, tokens=parts.tokens, parts=parts))
    # Innermost: a session's close waits for its requests in flight, then ends its agent session.
    middleware.append(Middleware(SessionCloseGuard, on_closed=functools.partial(_end_agent_session, parts)))
    return {
        "host_origin_protection": True,
        "allowed_hosts": list(service.allowed_hosts) or None,
        "allowed_origins": list(service.allowed_origins) or None,
        "middleware": middleware,
    }
