"""The agent's side of its upstreams' notifications, and of its cancellations.

An upstream session belongs to one agent session (backends/mcp/upstream.py); what the
upstream sends is relayed to that agent's MCP connection as sent:

- `notifications/progress` carries the agent's own progress token (the agent's `_meta`
  went upstream unchanged), and goes on the stream of the request that asked for it;
  an upstream never gets a token the agent did not send, so the agent gets progress
  only when it asked;
- `notifications/message` (log messages, as the upstream wrote them) goes on the stream
  of the agent's latest request forwarded to that upstream, else on the connection's;
- `notifications/resources/updated` names the resource as the agent sees it (prefixed
  `scheme://server/path` when several servers are fronted); list changes and anything
  else go on the connection's own stream.

A request the agent cancels is cancelled upstream with the agent's reason
(`notifications/cancelled` reaches the front door as the upstream request is abandoned:
`cancel_reason` waits a moment for it).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import anyio
from mcp_types import ServerNotification

from backends.mcp.fastmcp_private import cancel_requested
from router.mcp.reads import namespaced_uri

log = logging.getLogger("simroute.mcp")

# (agent session, the agent's request id, its ServerSession) of the request being forwarded upstream.
FORWARDING: ContextVar[tuple[str, str, Any] | None] = ContextVar("simroute_forwarding", default=None)
_KEPT_CANCELS = 256  # cancellations remembered for requests that may be abandoned upstream next


class FrontRelay:
    def __init__(self, *, prefixed: bool, cancel_wait_s: float = 0.5) -> None:
        self.prefixed = prefixed
        self.cancel_wait_s = cancel_wait_s
        self._fronts: dict[str, Any] = {}  # agent session -> a ServerSession of its connection (its own stream)
        self._forwarded: dict[
            tuple[str, str], list[tuple[Any, Any]]
        ] = {}  # (agent session, server) -> its requests upstream now
        self._progress: dict[
            tuple[str, Any], tuple[Any, Any]
        ] = {}  # (agent session, its progress token) -> its request
        self._cancels: dict[tuple[str, str], str | None] = {}  # (agent session, request id) -> the agent's reason
        self._cancel_seen: dict[tuple[str, str], asyncio.Event] = {}

    def seen(self, session_id: str, front: Any) -> None:
        """The agent session's connection, as of its latest request."""
        if front is not None:
            self._fronts[session_id] = front

    @contextmanager
    def forwarding(self, session_id: str, server: str, ctx: Any) -> Iterator[None]:
        """While the agent's current request (`ctx`) is forwarded to `server`."""
        try:
            front, request_id = ctx.session, ctx.request_id
            meta = ctx.request_context.meta if ctx.request_context is not None else None
        except RuntimeError:  # an episode's step taken in-process has no MCP request
            front = None
        if front is None:
            yield
            return
        self._fronts[session_id] = front
        request = (front, request_id)
        forwarded = self._forwarded.setdefault((session_id, server), [])
        forwarded.append(request)
        token = (meta or {}).get("progressToken")
        if token is not None:
            self._progress[(session_id, token)] = request
        marker = FORWARDING.set((session_id, str(request_id), front))
        try:
            yield
        finally:
            FORWARDING.reset(marker)
            forwarded.remove(request)
            if token is not None:
                self._progress.pop((session_id, token), None)
            self._cancels.pop((session_id, str(request_id)), None)

    # --- what an upstream sent --------------------------------------------------------------

    async def upstream_notification(self, session_id: str, server: str, notification: ServerNotification) -> None:
        method = notification.method
        params: Any = getattr(notification, "params", None)
        if method == "notifications/progress":
            request = self._progress.get((session_id, params.progress_token))
            if request is not None:  # else: the agent's request is over, or asked for no progress
                await self._send(session_id, request[0], notification, request[1])
            return
        if method == "notifications/message":
            forwarded = self._forwarded.get((session_id, server))
            if forwarded:
                await self._send(session_id, forwarded[-1][0], notification, forwarded[-1][1])
                return
        elif method == "notifications/resources/updated" and self.prefixed:
            notification = notification.model_copy(
                update={"params": params.model_copy(update={"uri": namespaced_uri(server, str(params.uri))})}
            )
        await self._send(session_id, self._fronts.get(session_id), notification, None)

    @staticmethod
    async def _send(session_id: str, front: Any, notification: ServerNotification, request_id: Any) -> None:
        if front is None:
            return
        try:
            await front.send_notification(notification, related_request_id=request_id)
        # Boundary: a notification to the agent is best effort; whatever its transport
        # raises when the agent went away must not break the upstream's message handler.
        except Exception as exc:  # noqa: BLE001 - logged; the agent is gone, nothing to tell
            log.debug("could not relay %s to session %s: %s", notification.method, session_id, exc)

    def session_closed(self, session_id: str) -> None:
        self._fronts.pop(session_id, None)

    # --- cancellations ----------------------------------------------------------------------

    def cancelled(self, session_id: str, request_id: Any, reason: str | None) -> None:
        """The agent cancelled its request `request_id` (notifications/cancelled)."""
        key = (session_id, str(request_id))  # fastmcp gives a request's id as text
        self._cancels[key] = reason
        while len(self._cancels) > _KEPT_CANCELS:
            self._cancels.pop(next(iter(self._cancels)))
        event = self._cancel_seen.pop(key, None)
        if event is not None:
            event.set()

    async def cancel_reason(self) -> tuple[bool, str | None]:
        """(known, reason) of the agent's cancellation of the request being forwarded: a
        request abandoned upstream because the agent cancelled it is cancelled with the
        agent's reason (None: it gave none); otherwise (a deadline) it is not known."""
        forwarding = FORWARDING.get()
        if forwarding is None or not cancel_requested(forwarding[2]):  # not the agent's cancellation (a deadline)
            return False, None
        key = forwarding[:2]
        if key not in self._cancels:  # the cancellation interrupts the request before the front door reads it
            event = self._cancel_seen.setdefault(key, asyncio.Event())
            with anyio.move_on_after(self.cancel_wait_s):
                await event.wait()
            self._cancel_seen.pop(key, None)
        if key not in self._cancels:
            return False, None
        return True, self._cancels.pop(key)
