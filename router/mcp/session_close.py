"""An MCP session's requests in order: its close (`DELETE /mcp`) never races them, and
a request id is never in flight twice.

The SDK's streamable-HTTP transport checks that a session is open when a POST
arrives, then sets the request up; a DELETE landing in between terminates the
session under it. The POST then either fails with a traceback in the log (its
message cannot be delivered) or, when its answer stream was made after the
termination closed the others, stays open forever with keep-alive pings and no
answer. simroute puts the two in order, in front of the transport:

- a DELETE waits (up to `CLOSE_GRACE_S`) for the session's POSTs in flight to be
  answered, cancels those still running after that (a stream already started is
  ended, one not started gets a 404 saying why), then closes the session;
- a POST arriving while its session closes gets that 404 at once;
- a POST naming a request id already in flight in its session waits for that request
  to be answered, then goes on. The transport keeps one answer stream per request id:
  the second POST took the first's stream, and the first waited forever with
  keep-alive pings and no answer. (A client must not reuse an id within a session;
  one that retries a request still running gets the answer in turn, each POST its own.)

The work a cancelled request started (a tool call being routed) goes on in the
engine and is recorded as always; only the wait for its answer is cut.
"""

from __future__ import annotations

import collections
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio

CLOSE_GRACE_S = 5.0
_GONE = "the MCP session was closed while this request was in flight"
_GUARDED = "simroute.session_guarded"  # a scope key: this request is in the guard's books


@dataclass(eq=False)
class _Flight:
    """One POST in flight: its body once read, its cancel scope, and how far its answer got."""

    send: Any
    body: bytes | None = None
    _ids: frozenset[str] | None = None
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    done: anyio.Event = field(default_factory=anyio.Event)
    started: bool = False
    completed: bool = False

    def request_ids(self) -> frozenset[str]:
        """The JSON-RPC request ids its body carries (none while the body is unread).
        Parsed only when another POST of the session is in flight: a lone one never is."""
        if self._ids is None and self.body is not None:
            self._ids = _request_ids(self.body)
        return self._ids or frozenset()

    async def send_tracked(self, message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            self.started = True
        elif message["type"] == "http.response.body" and not message.get("more_body", False):
            self.completed = True
        await self.send(message)

    async def finish(self) -> None:
        """The answer of a request cut short: ended if started, else a clear 404."""
        if self.completed:
            return
        if self.started:
            await self.send({"type": "http.response.body", "body": b"", "more_body": False})
        else:
            await gone(self.send)


async def gone(send: Any) -> None:
    body = json.dumps(
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": f"Not Found: {_GONE}"}}
    ).encode()
    await send({"type": "http.response.start", "status": 404, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": body})


class SessionCloseGuard:
    """ASGI middleware in front of the MCP transport (see the module's docstring)."""

    def __init__(
        self,
        app: Any,
        *,
        grace_s: float = CLOSE_GRACE_S,
        on_closed: Callable[[Any, str], Awaitable[None]] | None = None,
    ) -> None:
        self.app = app
        self.grace_s = grace_s
        self.on_closed = on_closed  # told (the DELETE's scope, the session id) once a session was closed
        self._in_flight: dict[str, set[_Flight]] = {}
        self._closing: set[str] = set()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        session = _session_of(scope) if scope["type"] == "http" else None
        if session is None or scope["method"] not in ("POST", "DELETE") or scope.get(_GUARDED):
            await self.app(scope, receive, send)
            return
        # An episode's MCP URL passes the request through the app again (as /mcp, its
        # scope copied): it is guarded once, here (else it would wait for its own id).
        scope[_GUARDED] = True
        if scope["method"] == "DELETE":
            await self._close(session, scope, receive, send)
        elif session in self._closing:
            await gone(send)
        else:
            await self._serve(session, scope, receive, send)

    async def _serve(self, session: str, scope: Any, receive: Any, send: Any) -> None:
        # In flight from the first moment: a DELETE landing while the body is read waits for it too.
        flight = _Flight(send)
        flights = self._in_flight.setdefault(session, set())
        flights.add(flight)
        try:
            with flight.scope:
                flight.body, receive = await _buffered(receive)
                # Of two POSTs with one id, the one read second sees the first's ids (no await between).
                others = [other for other in flights if other is not flight]
                if others:
                    ids = flight.request_ids()
                    for other in [other for other in others if other.request_ids() & ids]:
                        await other.done.wait()  # its answer first (a close cancels this wait)
                await self.app(scope, receive, flight.send_tracked)
        finally:
            left = self._in_flight.get(session)  # gone already when the session's close ended them
            if left is not None:
                left.discard(flight)
                if not left:
                    del self._in_flight[session]
            flight.done.set()
        if flight.scope.cancelled_caught:
            await flight.finish()

    async def _close(self, session: str, scope: Any, receive: Any, send: Any) -> None:
        self._closing.add(session)
        try:
            flights = list(self._in_flight.get(session, ()))
            with anyio.move_on_after(self.grace_s):
                for flight in flights:
                    await flight.done.wait()
            for flight in flights:
                flight.scope.cancel()
            for flight in flights:
                await flight.done.wait()
            statuses: list[int] = []

            async def send_noting_status(message: dict[str, Any]) -> None:
                if message["type"] == "http.response.start":
                    statuses.append(message["status"])
                await send(message)

            await self.app(scope, receive, send_noting_status)
            if self.on_closed is not None and statuses and 200 <= statuses[0] < 300:  # the transport closed it
                await self.on_closed(scope, session)
        finally:
            self._closing.discard(session)


async def _buffered(receive: Any) -> tuple[bytes, Any]:
    """The request's body, read whole (the transport reads it whole too), and a receive
    that hands the same messages to the transport, then whatever comes after."""
    messages = []
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request" or not message.get("more_body", False):
            break
    body = b"".join(message.get("body", b"") for message in messages if message["type"] == "http.request")
    pending = collections.deque(messages)

    async def replay() -> Any:
        return pending.popleft() if pending else await receive()

    return body, replay


def _request_ids(body: bytes) -> frozenset[str]:
    """The ids of the JSON-RPC requests in a POST's body (as JSON: 1 and "1" differ);
    none for notifications, answers to the server's own requests, or what does not parse
    (the transport answers that)."""
    try:
        parsed = json.loads(body)
    except (ValueError, RecursionError):
        return frozenset()
    messages = parsed if isinstance(parsed, list) else [parsed]
    return frozenset(
        json.dumps(message["id"])
        for message in messages
        if isinstance(message, dict)
        and "method" in message
        and isinstance(message.get("id"), (str, int))
        and not isinstance(message["id"], bool)
    )


def _session_of(scope: Any) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == b"mcp-session-id":
            return value.decode("latin-1")
    return None
