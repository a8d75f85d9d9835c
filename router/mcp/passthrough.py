"""MCP requests that are not calls: `completion/complete`, `resources/subscribe`,
`resources/unsubscribe`, `logging/setLevel`; and what `initialize` says simroute can do.

Each reaches an upstream only where the session's route for that server is real or
shadow (the policies decide, as for a call of the server's, with the method as the
tool; nothing is recorded): the agent's params go as they came (a prefixed name or URI
made the upstream's own), and the upstream's answer or error comes back as it sent it.
Elsewhere (sim, replay, deny, a virtual server) completions answer empty and a
subscription is accepted but sends nothing. A level set before an upstream opened is
sent when it opens (backends/mcp/upstream.py).

`initialize` advertises completions and resource subscriptions when an upstream does
(its capabilities as of its first handshake in this process: the first session opens
its upstreams at `initialize` where its route for them is real or shadow), and
simroute's own name and version. `notifications/cancelled` is noted for the relay
(router/mcp/relay.py): the upstream request is cancelled with the agent's reason.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

import mcp_types
from fastmcp import FastMCP
from fastmcp.server.dependencies import get_context
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from mcp.shared.exceptions import MCPError
from mcp_types import (
    CompleteRequestParams,
    EmptyResult,
    SetLevelRequestParams,
    SubscribeRequestParams,
    UnsubscribeRequestParams,
)

from backends.errors import BackendUnavailable
from backends.mcp.fastmcp_private import low_level, monitored
from calls import Call, Decision, Route, Session
from policies.base import decide
from router.engine.sessions import SessionRefusedError
from router.mcp.identity import agent_session_id
from router.mcp.names import ToolNames
from router.mcp.provider import SnapshotProxyProvider
from router.mcp.reads import server_of_uri
from router.mcp.relay import FrontRelay
from router.mcp.virtual_provider import VirtualProvider
from router.runtime.parts import McpParts

log = logging.getLogger("simroute.mcp")

_FORWARDED = (Route.REAL, Route.SHADOW)
_FALLBACK = Decision(Route.REAL, "default", "no policy answered")
_EMPTY_COMPLETION = mcp_types.CompleteResult(completion=mcp_types.Completion(values=[]))


class PassThrough(Middleware):
    def __init__(
        self,
        parts: McpParts,
        names: ToolNames,
        providers: Mapping[str, SnapshotProxyProvider | VirtualProvider],
        relay: FrontRelay,
    ) -> None:
        self.parts = parts
        self.names = names
        self.upstreams = {server: p for server, p in providers.items() if isinstance(p, SnapshotProxyProvider)}
        self.relay = relay

    def register(self, server: FastMCP) -> None:
        low = low_level(server)
        low.add_request_handler("completion/complete", CompleteRequestParams, self.complete)
        low.add_request_handler("resources/subscribe", SubscribeRequestParams, self.subscribe)
        low.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, self.unsubscribe)
        low.add_request_handler("logging/setLevel", SetLevelRequestParams, self.set_level)

    # --- the requests -------------------------------------------------------------------

    async def complete(self, ctx: Any, params: CompleteRequestParams) -> mcp_types.CompleteResult:
        ref = params.ref
        if isinstance(ref, mcp_types.PromptReference):
            target = self.names.split(ref.name)
            upstream_ref: Any = ref.model_copy(update={"name": target[1]}) if target else None
        else:
            target = server_of_uri(ref.uri, self.names.servers, prefixed=self.names.prefixed)
            upstream_ref = ref.model_copy(update={"uri": target[1]}) if target else None
        if target is None:
            return _EMPTY_COMPLETION
        request = mcp_types.CompleteRequest(params=params.model_copy(update={"ref": upstream_ref}))
        answer = await self._forward(
            target[0], request, mcp_types.CompleteResult, {"ref": ref.model_dump(mode="json", by_alias=True)}
        )
        return answer if answer is not None else _EMPTY_COMPLETION

    async def subscribe(self, ctx: Any, params: SubscribeRequestParams) -> EmptyResult:
        return await self._subscription(mcp_types.SubscribeRequest, params)

    async def unsubscribe(self, ctx: Any, params: UnsubscribeRequestParams) -> EmptyResult:
        return await self._subscription(mcp_types.UnsubscribeRequest, params)

    async def _subscription(self, kind: Any, params: Any) -> EmptyResult:
        target = server_of_uri(str(params.uri), self.names.servers, prefixed=self.names.prefixed)
        if target is not None:
            request = kind(params=params.model_copy(update={"uri": target[1]}))
            await self._forward(target[0], request, EmptyResult, {"uri": str(params.uri)})
        return EmptyResult()

    async def set_level(self, ctx: Any, params: SetLevelRequestParams) -> EmptyResult:
        session = self._session(agent_session_id(get_context()))
        if session is not None:
            servers = [
                server
                for server in self.upstreams
                if self.route(session, server, "logging/setLevel", {"level": params.level}) in _FORWARDED
            ]
            await self.parts.upstreams.set_log_level(session.id, params.level, servers)
        return EmptyResult()

    async def _forward(self, server: str, request: Any, answer: type[Any], arguments: dict[str, Any]) -> Any:
        """The upstream's answer to `request`, or None where the session's route for
        `server` does not reach it. An upstream that cannot start is an error."""
        ctx = get_context()
        session = self._session(agent_session_id(ctx))
        if (
            server not in self.upstreams
            or session is None
            or self.route(session, server, request.method, arguments) not in _FORWARDED
        ):
            return None
        try:
            client = await self.upstreams[server].client_factory()  # type: ignore[misc]  # simroute's factories are async
        except BackendUnavailable as exc:
            raise MCPError(mcp_types.INTERNAL_ERROR, f"simroute: {exc}") from exc
        with self.relay.forwarding(session.id, server, ctx):
            return await monitored(client, client.session.send_request(request, answer))

    # --- routes -------------------------------------------------------------------------

    def _session(self, session_id: str) -> Session | None:
        try:
            return self.parts.sessions.get(session_id)
        except SessionRefusedError:
            return None

    def route(self, session: Session, server: str, method: str, arguments: dict[str, Any]) -> Route:
        """The session's route for `server`, as the policies decide a request of it."""
        setup = session.episode
        if setup is not None and setup.scope is not None and ("mcp", server) not in setup.scope:
            return Route.DENY
        policies = list(setup.policies) if setup is not None and setup.policies else self.parts.engine.policies
        return decide(policies, Call("mcp", server, method, arguments, session.id), session, fallback=_FALLBACK).route

    # --- initialize and cancellations ---------------------------------------------------

    async def on_initialize(self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]) -> Any:
        result = await call_next(context)
        if result is None or context.fastmcp_context is None:
            return result
        await self._meet_upstreams(context.fastmcp_context)
        return result.model_copy(update={"capabilities": self._capabilities(result.capabilities)})

    async def _meet_upstreams(self, ctx: Any) -> None:
        """Open the session's upstreams whose capabilities this process does not know yet
        (where its route for them is real or shadow): simroute says what they can do. Each
        opens within `startup_timeout_s`, all at once."""
        pool = self.parts.upstreams
        # One that failed its last start is not waited for again here: its listing and calls say why.
        unknown = [
            server for server in self.upstreams if server not in pool.capabilities and server not in pool.start_errors
        ]
        session = self._session(agent_session_id(ctx)) if unknown else None
        if session is None or session.is_episode:  # an episode lists from snapshots: it starts nothing it need not
            return
        servers = [server for server in unknown if self.route(session, server, "initialize", {}) in _FORWARDED]

        async def meet(server: str) -> None:
            try:
                await self.upstreams[server].client_factory()  # type: ignore[misc]  # simroute's factories are async
            except BackendUnavailable as exc:  # said again where it matters: its listing, its calls, /health
                log.info("upstream %r not met at initialize: %s", server, exc)

        await asyncio.gather(*(meet(server) for server in servers))

    def _capabilities(self, capabilities: mcp_types.ServerCapabilities) -> mcp_types.ServerCapabilities:
        known = [caps for server, caps in self.parts.upstreams.capabilities.items() if server in self.upstreams]
        subscribe = any(caps.resources is not None and bool(caps.resources.subscribe) for caps in known)
        completions = mcp_types.CompletionsCapability() if any(caps.completions is not None for caps in known) else None
        resources = (
            capabilities.resources.model_copy(update={"subscribe": subscribe})
            if capabilities.resources is not None
            else None
        )
        return capabilities.model_copy(update={"completions": completions, "resources": resources})

    async def on_notification(self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]) -> Any:
        message = context.message
        if (
            context.method == "notifications/cancelled"
            and isinstance(message, Mapping)
            and context.fastmcp_context is not None
        ):
            reason = message.get("reason")
            self.relay.cancelled(
                agent_session_id(context.fastmcp_context),
                message.get("requestId"),
                reason if isinstance(reason, str) else None,
            )
        return await call_next(context)
