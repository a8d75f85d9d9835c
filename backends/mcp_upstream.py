"""Real MCP upstreams: exactly one warm upstream session per (agent session, server).

A fresh upstream session per call costs a process spawn and a handshake (tens of
milliseconds); keeping one per agent session costs nothing per call and keeps
stateful servers stateful.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping

import anyio
from fastmcp.client.transports import ClientTransport, SSETransport, StdioTransport, StreamableHttpTransport
from fastmcp.server.providers.proxy import StatefulProxyClient

from router.config import RemoteServer, ServerSpec, StdioServer

log = logging.getLogger("simroute.upstream")


class UpstreamError(RuntimeError):
    """An upstream MCP server could not be started, reached or used."""


def make_transport(spec: ServerSpec) -> ClientTransport:
    """One transport per upstream session: transports hold the subprocess or
    HTTP session, so sharing one would share the upstream between agents."""
    if isinstance(spec, StdioServer):
        return StdioTransport(command=spec.command, args=list(spec.args), env=dict(spec.env) or None, cwd=spec.cwd, keep_alive=False)
    assert isinstance(spec, RemoteServer)
    if spec.type == "sse" or (spec.type is None and spec.url.rstrip("/").endswith("/sse")):
        return SSETransport(spec.url, headers=dict(spec.headers) or None)
    return StreamableHttpTransport(spec.url, headers=dict(spec.headers) or None)


class UpstreamPool:
    """Opens upstream sessions on first use and keeps them until the agent
    session closes. A dead upstream is dropped so the next call starts a new one."""

    def __init__(self, specs: Mapping[str, ServerSpec], *, connect_timeout_s: float = 30.0) -> None:
        self.specs = dict(specs)
        self.connect_timeout_s = connect_timeout_s
        self._clients: dict[tuple[str, str], StatefulProxyClient] = {}
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}
        self.sessions_opened = 0  # upstream handshakes, for tests and metrics

    async def client_for(self, session_id: str, server: str) -> StatefulProxyClient:
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
                log.warning("upstream %r for session %s is gone; starting a new one", server, session_id)
                await self._close_client(client)
            client = await self._connect(server)
            self._clients[key] = client
            return client

    async def _connect(self, server: str) -> StatefulProxyClient:
        spec = self.specs.get(server)
        if spec is None:
            raise UpstreamError(f"no upstream server named {server!r} is configured")
        # Inbound HTTP headers (the agent's own) are not forwarded: upstream credentials come from the config.
        client = StatefulProxyClient(make_transport(spec), forward_incoming_headers=False)
        try:
            with anyio.fail_after(self.connect_timeout_s):
                await client.__aenter__()
        except TimeoutError as exc:
            await self._close_client(client)
            raise UpstreamError(f"upstream {server!r} did not finish starting within {self.connect_timeout_s:g}s") from exc
        except Exception as exc:  # any start failure: missing binary, crash, bad URL, handshake error
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
        for key in [k for k in self._clients if k[0] == session_id]:
            await self._close_client(self._clients.pop(key))
            self._locks.pop(key, None)

    async def aclose(self) -> None:
        for session_id in {k[0] for k in self._clients}:
            await self.close_session(session_id)

    @staticmethod
    async def _close_client(client: StatefulProxyClient) -> None:
        with anyio.CancelScope(shield=True), anyio.move_on_after(5):
            try:
                await client.close()
            except Exception as exc:  # closing a broken upstream must not break the caller
                log.debug("closing upstream client failed: %s", _describe(exc))


def _describe(exc: BaseException) -> str:
    """The innermost useful message of an exception (groups included)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if text != type(exc).__name__ else text
