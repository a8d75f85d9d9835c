"""Real MCP upstreams: exactly one warm upstream session per (agent session, server).

A fresh upstream session per call costs a process spawn and a handshake (tens of
milliseconds); keeping one per agent session costs nothing per call and keeps
stateful servers stateful.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio
import httpx2
from fastmcp.client.messages import MessageHandler
from fastmcp.client.transports import ClientTransport, SSETransport, StdioTransport, StreamableHttpTransport
from fastmcp.exceptions import MCPError
from fastmcp.server.providers.proxy import StatefulProxyClient

from backends.errors import BackendUnavailable
from backends.mcp.servers import RemoteServer, ServerSpec, StdioServer

log = logging.getLogger("simroute.upstream")

# What starting an upstream session raises (read from fastmcp's `Client`): its
# "Client failed to connect" RuntimeError (a spawn's OSError, a closed stream),
# the server's refusal (MCPError), an HTTP server's status (httpx2), a bad spec
# (ValueError), and groups of these from the transport's task group.
_START_FAILURES: tuple[type[Exception], ...] = (RuntimeError, OSError, ValueError, MCPError, httpx2.HTTPError, ExceptionGroup)


class UpstreamError(BackendUnavailable):
    """An upstream MCP server is not configured, or could not be started or
    reached within its deadline. Raised by `UpstreamPool` (and the proxy provider
    when a listing times out); the MCP middleware answers the call with
    "simroute: <message>", and the next call tries a new upstream."""


def make_transport(spec: ServerSpec) -> ClientTransport:
    """One transport per upstream session: transports hold the subprocess or
    HTTP session, so sharing one would share the upstream between agents."""
    if isinstance(spec, StdioServer):
        return StdioTransport(command=spec.command, args=list(spec.args), env=dict(spec.env) or None, cwd=spec.cwd, keep_alive=False)
    assert isinstance(spec, RemoteServer)
    if spec.type == "sse" or (spec.type is None and spec.url.rstrip("/").endswith("/sse")):
        return SSETransport(spec.url, headers=dict(spec.headers) or None)
    return StreamableHttpTransport(spec.url, headers=dict(spec.headers) or None)


class ListChangedRelay(MessageHandler):
    """Relays an upstream's list-changed notifications to the agent session that
    owns the upstream session (fastmcp's proxy relays progress, logs and
    server-to-client requests, but not these)."""

    def __init__(self, pool: UpstreamPool, session_id: str, server: str) -> None:
        self.pool, self.session_id, self.server = pool, session_id, server

    async def on_tool_list_changed(self, message: object) -> None:
        await self.pool.list_changed(self.session_id, self.server, "tools")

    async def on_resource_list_changed(self, message: object) -> None:
        await self.pool.list_changed(self.session_id, self.server, "resources")

    async def on_prompt_list_changed(self, message: object) -> None:
        await self.pool.list_changed(self.session_id, self.server, "prompts")


class UpstreamPool:
    """Opens upstream sessions on first use and keeps them until the agent
    session closes. A dead upstream is dropped so the next call starts a new one."""

    def __init__(self, specs: Mapping[str, ServerSpec], *, connect_timeout_s: float = 30.0) -> None:
        self.specs = dict(specs)
        self.connect_timeout_s = connect_timeout_s
        self._clients: dict[tuple[str, str], StatefulProxyClient] = {}
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}
        # The agent's side of each session (an MCP server session), for notifications.
        self._fronts: dict[str, Any] = {}
        # Called with (server, kind) when an upstream's tools/resources/prompts change.
        self.on_list_changed: list[Callable[[str, str], None]] = []
        self.sessions_opened = 0  # upstream handshakes, for tests and metrics
        # Asked before a session's first upstream session of a `stateful` server starts
        # (with several replicas: does another replica hold it?); raises BackendUnavailable
        # to refuse it. Told when such an upstream session closed.
        self.before_open: Callable[[str, str], Awaitable[None]] | None = None
        self.after_close: Callable[[str, str], Awaitable[None]] | None = None

    async def list_changed(self, session_id: str, server: str, kind: str) -> None:
        for hook in self.on_list_changed:
            hook(server, kind)
        front = self._fronts.get(session_id)
        if front is None:
            return
        try:
            await getattr(front, f"send_{kind[:-1]}_list_changed")()
        # Boundary: a notification to the agent is best effort; whatever its transport
        # raises when the agent went away must not break the upstream's message handler.
        except Exception as exc:  # noqa: BLE001 - logged; the agent is gone, nothing to tell
            log.debug("could not relay %s list change to session %s: %s", kind, session_id, exc)

    async def client_for(self, session_id: str, server: str, *, front: Any = None) -> StatefulProxyClient:
        if front is not None:
            self._fronts[session_id] = front
        key = (session_id, server)
        client = self._clients.get(key)
        if client is not None and client.is_connected():
            return client
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            client = self._clients.get(key)
            if client is not None and client.is_connected():
                return client
            if client is not None:  # it died: the upstream crashed or hung up
                log.warning("upstream %r of a session is gone; starting a new one", server)
                await self._close_client(client)
            elif self.before_open is not None and self._stateful(server):
                await self.before_open(session_id, server)
            client = await self._connect(server, session_id)
            self._clients[key] = client
            return client

    async def _connect(self, server: str, session_id: str) -> StatefulProxyClient:
        spec = self.specs.get(server)
        if spec is None:
            raise UpstreamError(f"no upstream server named {server!r} is configured")
        # Inbound HTTP headers (the agent's own) are not forwarded: upstream credentials come from the config.
        client = StatefulProxyClient(
            make_transport(spec), forward_incoming_headers=False, message_handler=ListChangedRelay(self, session_id, server)
        )
        try:
            with anyio.fail_after(self.connect_timeout_s):
                await client.__aenter__()
        except TimeoutError as exc:
            await self._close_client(client)
            raise UpstreamError(f"upstream {server!r} did not finish starting within {self.connect_timeout_s:g}s") from exc
        except _START_FAILURES as exc:  # missing binary, crash, bad URL, refused handshake
            await self._close_client(client)
            raise UpstreamError(f"upstream {server!r} failed to start: {_describe(exc)}") from exc
        self.sessions_opened += 1
        return client

    async def discard(self, session_id: str, server: str) -> None:
        """Drop a session's upstream after it failed, so the next call starts a new one."""
        client = self._clients.pop((session_id, server), None)
        if client is not None:
            await self._close_client(client)

    async def close_session(self, session_id: str) -> None:
        self._fronts.pop(session_id, None)
        for key in [k for k in self._clients if k[0] == session_id]:
            await self._close_client(self._clients.pop(key))
            self._locks.pop(key, None)
            if self.after_close is not None and self._stateful(key[1]):
                await self.after_close(session_id, key[1])

    def _stateful(self, server: str) -> bool:
        return bool(getattr(self.specs.get(server), "stateful", False))

    async def aclose(self) -> None:
        for session_id in {k[0] for k in self._clients}:
            await self.close_session(session_id)

    @staticmethod
    async def _close_client(client: StatefulProxyClient) -> None:
        with anyio.CancelScope(shield=True), anyio.move_on_after(5):
            try:
                await client.close()
            # Boundary: a cleanup path. Closing a broken upstream must not mask the
            # error that made the caller close it; what closing raised is logged.
            except Exception as exc:  # noqa: BLE001 - logged, the caller's own error goes on
                log.debug("closing upstream client failed: %s", _describe(exc))


def _describe(exc: BaseException) -> str:
    """The innermost useful message of an exception (groups included)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if text != type(exc).__name__ else text
