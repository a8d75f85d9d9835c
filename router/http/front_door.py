"""What the HTTP channel's addons share: the engine and sessions they route with,
the listeners (front doors) flows arrive by, and how a refusal is recorded.

Every refusal of the HTTP channel and its tunnels is a recorded call
(`record_refusal`), written before the client sees the answer. Past the session
cap a refusal still gets a record, in a transient session.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING

from backends.http.messages import error_structured, observation_of, response_parts
from calls import Call, Provenance, Route, Session
from records.record import new_record_id
from router.engine.sessions import SessionRefusedError
from router.http.access import Refused
from router.http.flows import make_response, server_of, url_of
from router.http.listeners import Listener, RoutingParts

if TYPE_CHECKING:
    from mitmproxy import connection, http

    from router.engine.engine import Outcome

UNPARSED_SESSION = "http-unparsed"  # the agent session of requests too malformed to carry one
UNAUTHENTICATED_SESSION = "http-unauthenticated"  # the session of refused credentials


class HttpFrontDoor:
    def __init__(self, parts: RoutingParts, listeners: Mapping[str, Listener]) -> None:
        self.engine = parts.engine
        self.sessions = parts.sessions
        self.listeners = dict(listeners)
        self._tasks: set[asyncio.Task] = set()

    def listener(self, client: connection.Client) -> Listener:
        """The front door a connection came in by (its gate and address policy)."""
        mode = client.proxy_mode
        listener = self.listeners.get(mode.full_spec) if mode is not None else None
        return listener or next(iter(self.listeners.values()))

    def transient_or_open(self, session_id: str) -> Session:
        """The open session, or (past the session cap) a transient one that only carries
        the refusal's record."""
        try:
            return self.sessions.get(session_id)
        except SessionRefusedError:
            return Session(id=session_id)

    async def record_refusal(self, call: Call, session: Session, *, policy: str, reason: str) -> Outcome:
        """Every refusal of the HTTP channel (and its tunnels) is recorded here, before the client sees it."""
        return await self.engine.reject(call, session, policy=policy, reason=reason)

    async def refuse(self, flow: http.HTTPFlow, refused: Refused, *, session_id: str, call: Call | None = None) -> None:
        """Answer `flow` with a recorded refusal."""
        outcome = None
        if refused.record:
            session = self.transient_or_open(session_id)
            if call is None:
                request = flow.request
                call = Call(
                    "http",
                    server_of(flow),
                    request.method.upper(),
                    {"method": request.method.upper(), "url": url_of(request)},
                    session.id,
                )
            outcome = await self.record_refusal(call, session, policy=refused.policy, reason=refused.reason)
        structured = error_structured(refused.status, refused.reason)
        status, reason, headers, body = response_parts(
            observation_of(structured, Provenance.NONE), fallback_status=refused.status
        )
        flow.response = make_response(status, reason, [*headers, *refused.headers.items()], body, Route.DENY, outcome)

    def record_unparsed(self, message: str) -> str:
        """Record a request mitmproxy could not parse (it answers 400 itself, before any
        hook, from synchronous code): no method or URL, so the call names what was
        wrong. The record is written by a kept task a moment later; returns its id."""
        session = self.transient_or_open(UNPARSED_SESSION)
        call = Call("http", "unknown", "INVALID", {"error": message}, session.id)
        record_id = new_record_id()
        reason = f"simroute proxy: malformed request: {message}"
        task = asyncio.get_running_loop().create_task(
            self.engine.reject(call, session, policy="http-parser", reason=reason, record_id=record_id),
            name="simroute-http-record",
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return record_id
