"""Real MCP upstreams: exactly one warm upstream session per (agent session, server).

A fresh upstream session per call costs a process spawn and a handshake (tens of
milliseconds); keeping one per agent session costs nothing per call and keeps
stateful servers stateful.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

import anyio
import httpx2
from fastmcp.client.messages import MessageHandler
from fastmcp.client.transports import ClientTransport, SSETransport, StdioTransport, StreamableHttpTransport
from fastmcp.exceptions import MCPError
from fastmcp.server.providers.proxy import StatefulProxyClient
from mcp_types import LoggingLevel, ServerCapabilities, ServerNotification

from backends.errors import BackendUnavailable
from backends.mcp.fastmcp_private import forward_cancel_reasons
from backends.mcp.servers import RemoteServer, ServerSpec, StdioServer

log = logging.getLogger("simroute.upstream")

# What starting an upstream session raises (read from fastmcp's `Client`): its
# "Client failed to connect" RuntimeError (a spawn's OSError, a closed stream),
# the server's refusal (MCPError), an HTTP server's status (httpx2), a bad spec
# (ValueError), and groups of these from the transport's task group.
_START_FAILURES: tuple[type[Exception], ...] = (
    RuntimeError,
    OSError,
    ValueError,
    MCPError,
    httpx2.HTTPError,
    ExceptionGroup,
)


class UpstreamError(BackendUnavailable):
    """An upstream MCP server is not configured, or could not be started or
    reached within its deadline. Raised by `UpstreamPool` (and the proxy provider
    when a listing times out); the MCP middleware answers the call with
    "simroute: <message>", and the next call tries a new upstream."""


# What a stdio server needs of simroute's environment to reach the network as simroute
# does (its CA bundle, its proxy), beside what the SDK passes every server (HOME, PATH,
# SHELL, TERM, USER, LOGNAME). A server entry's own `env` wins.
INHERITED_ENV = (
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    *(name for base in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY") for name in (base, base.lower())),
)


def stdio_env(spec: StdioServer, environ: Mapping[str, str] = os.environ) -> dict[str, str] | None:
    """The environment a stdio server starts with, over the SDK's safe defaults."""
    env = {name: environ[name] for name in INHERITED_ENV if environ.get(name)} | dict(spec.env)
    return env or None


def make_transport(spec: ServerSpec) -> ClientTransport:
    """One transport per upstream session: transports hold the subprocess or
    HTTP session, so sharing one would share the upstream between agents."""
    if isinstance(spec, StdioServer):
        return StdioTransport(
            command=spec.command, args=list(spec.args), env=stdio_env(spec), cwd=spec.cwd, keep_alive=False
        )
    assert isinstance(spec, RemoteServer)
    if spec.type == "sse" or (spec.type is None and spec.url.rstrip("/").endswith("/sse")):
        return SSETransport(spec.url, headers=dict(spec.headers) or None)
    return StreamableHttpTransport(spec.url, headers=dict(spec.headers) or None)


class Notices(Protocol):
    """Where an upstream's notifications go (the front door: the agent's MCP connection)."""

    async def upstream_notification(self, session_id: str, server: str, notification: ServerNotification) -> None: ...

    async def cancel_reason(self) -> tuple[bool, str | None]: ...

    def session_closed(self, session_id: str) -> None: ...


_LIST_CHANGED = {
    "notifications/tools/list_changed": "tools",
    "notifications/resources/list_changed": "resources",
    "notifications/prompts/list_changed": "prompts",
}


class UpstreamMessages(MessageHandler):
    """Hands every notification of an upstream session to the pool, for the agent
    session that owns it (progress, log messages, resource updates, list changes)."""

    def __init__(self, pool: UpstreamPool, session_id: str, server: str) -> None:
        self.pool, self.session_id, self.server = pool, session_id, server

    async def on_notification(self, message: ServerNotification) -> None:
        await self.pool.notified(self.session_id, self.server, message)


async def _not_logged_here(message: object) -> None:
    """Upstream log messages reach the agent as notifications (UpstreamMessages), as sent."""


class UpstreamPool:
    """Opens upstream sessions on first use and keeps them until the agent
    session closes. A dead upstream is dropped so the next call starts a new one."""

    def __init__(self, specs: Mapping[str, ServerSpec], *, connect_timeout_s: float = 30.0) -> None:
        self.specs = dict(specs)
        self.connect_timeout_s = connect_timeout_s
        self._clients: dict[tuple[str, str], StatefulProxyClient] = {}
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}
        # Where the upstreams' notifications go (set by the front door), and the agent's
        # reason when a request it cancelled is cancelled upstream.
        self.notices: Notices | None = None
        # Called with (server, kind) when an upstream's tools/resources/prompts change.
        self.on_list_changed: list[Callable[[str, str], None]] = []
        # What each server said it can do at its last handshake in this process.
        self.capabilities: dict[str, ServerCapabilities] = {}
        # Why each server's last start failed (cleared by its next start): /health says it.
        self.start_errors: dict[str, str] = {}
        # The log level each agent session asked for: sent to its upstreams as they open.
        self.log_levels: dict[str, LoggingLevel] = {}
        self.sessions_opened = 0  # upstream handshakes, for tests and metrics
        # Asked before a session's first upstream session of a `stateful` server starts
        # (with several replicas: does another replica hold it?); raises BackendUnavailable
        # to refuse it. Told when such an upstream session closed.
        self.before_open: Callable[[str, str], Awaitable[None]] | None = None
        self.after_close: Callable[[str, str], Awaitable[None]] | None = None

    async def notified(self, session_id: str, server: str, notification: ServerNotification) -> None:
        kind = _LIST_CHANGED.get(notification.method)
        if kind is not None:
            for hook in self.on_list_changed:
                hook(server, kind)
        if self.notices is not None:
            await self.notices.upstream_notification(session_id, server, notification)

    def client_if_open(self, session_id: str, server: str) -> StatefulProxyClient | None:
        client = self._clients.get((session_id, server))
        return client if client is not None and client.is_connected() else None

    def health(self) -> dict[str, dict[str, Any]]:
        """Each real server: whether its last start failed, and why."""
        return {
            server: {"ok": server not in self.start_errors, "error": self.start_errors.get(server)}
            for server in self.specs
        }

    async def set_log_level(self, session_id: str, level: LoggingLevel, servers: list[str]) -> None:
        """Keep `level` for the session's upstreams yet to open and send it to the open
        ones of `servers` that log. Raises the first upstream's refusal (MCPError)."""
        self.log_levels[session_id] = level
        refused: list[MCPError] = []
        for server in servers:
            client = self.client_if_open(session_id, server)
            if client is None or not self._logs(server):
                continue
            try:
                await client.session.set_logging_level(level)
            except MCPError as exc:
                refused.append(exc)
        if refused:
            raise refused[0]

    def _logs(self, server: str) -> bool:
        capabilities = self.capabilities.get(server)
        return capabilities is not None and capabilities.logging is not None

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
        client: StatefulProxyClient[ClientTransport] = StatefulProxyClient(
            make_transport(spec),
            forward_incoming_headers=False,
            message_handler=UpstreamMessages(self, session_id, server),
            log_handler=_not_logged_here,
        )
        try:
            with anyio.fail_after(self.connect_timeout_s):
                await client.__aenter__()
        except TimeoutError as exc:
            await self._close_client(client)
            raise self._failed(
                server, f"upstream {server!r} did not finish starting within {self.connect_timeout_s:g}s"
            ) from exc
        except _START_FAILURES as exc:  # missing binary, crash, bad URL, refused handshake
            await self._close_client(client)
            raise self._failed(server, f"upstream {server!r} failed to start: {_describe(exc)}") from exc
        self.sessions_opened += 1
        self.start_errors.pop(server, None)
        if client.initialize_result is not None:
            self.capabilities[server] = client.initialize_result.capabilities
        if self.notices is not None:
            forward_cancel_reasons(client.session, self._cancel_reason)
        level = self.log_levels.get(session_id)
        if level is not None and self._logs(server):  # asked for before this upstream opened
            try:
                await client.session.set_logging_level(level)
            except MCPError as exc:
                log.warning("upstream %r refused log level %r: %s", server, level, exc)
        return client

    def _failed(self, server: str, message: str) -> UpstreamError:
        self.start_errors[server] = message
        return UpstreamError(message)

    async def _cancel_reason(self) -> tuple[bool, str | None]:
        return await self.notices.cancel_reason() if self.notices is not None else (False, None)

    async def discard(self, session_id: str, server: str) -> None:
        """Drop a session's upstream after it failed, so the next call starts a new one."""
        client = self._clients.pop((session_id, server), None)
        if client is not None:
            await self._close_client(client)

    async def close_session(self, session_id: str) -> None:
        self.log_levels.pop(session_id, None)
        if self.notices is not None:
            self.notices.session_closed(session_id)
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
