"""The mitmproxy addon that routes every HTTP request through the engine.

`request`: the request becomes a `Call` and the engine decides. `sim`, `replay`
and `deny` are answered right there (recorded before the agent sees them); on
`real` and `shadow` the request goes upstream and a deadline is armed.
`responseheaders`: the upstream answered; the provenance headers are added and
a streaming or large body is passed through as it arrives, its first
`max_body_bytes` kept for the record. `response`: the record is written
(before the agent sees a buffered response; when complete for a streamed one).
`error`: an upstream that is down, too slow or broken is recorded, and the agent
gets a JSON reason (see `errors.py`).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from router.config import HttpConfig
from router.http import errors
from backends.http_messages import (
    PROVENANCE_HEADER,
    RECORD_HEADER,
    ROUTE_HEADER,
    BodyCapture,
    HttpSettings,
    encode_body,
    error_structured,
    make_call,
    observation_of,
    response_parts,
    response_record,
)
from router.sessions import SessionLimitError
from router.types import Call, Observation, Provenance, Route

if TYPE_CHECKING:
    from mitmproxy import connection, http

    from router.app import Runtime
    from router.engine import Outcome, Pending

log = logging.getLogger("simroute.http")

_REAL = "simroute.real"  # flow.metadata key of a request on its way to the real upstream
DEADLINE_MESSAGE = "simroute: deadline for the upstream's answer passed"
UNPARSED_SESSION = "http-unparsed"  # the agent session of requests too malformed to carry one


@dataclass(slots=True)
class _RealSide:
    pending: Pending
    started: float
    timer: asyncio.TimerHandle | None = None
    capture: BodyCapture | None = None
    timed_out: bool = False


class HttpRouting:
    def __init__(self, runtime: Runtime, config: HttpConfig) -> None:
        self.runtime = runtime
        self.config = config
        self.settings = HttpSettings(
            record_headers=tuple(h.lower() for h in config.record_headers), max_body_bytes=config.max_body_bytes
        )
        self._session_header = config.session_header
        # The session an HTTPS tunnel's CONNECT named (clients send proxy credentials
        # there, not on the requests inside), by client connection.
        self._tunnels: dict[str, str] = {}

    # --- sessions ------------------------------------------------------------------------

    def session_id(self, flow: http.HTTPFlow) -> str:
        """From the session header, else the proxy-auth user name (of the request, or of
        the CONNECT that opened its HTTPS tunnel), else one per client connection. Both
        headers are removed: the upstream never sees them."""
        headers = flow.request.headers
        explicit = headers.pop(self._session_header, None)
        user = _proxy_user(headers.pop("Proxy-Authorization", None))
        return explicit or user or self._tunnels.get(flow.client_conn.id) or f"http-{flow.client_conn.id[:12]}"

    def http_connect(self, flow: http.HTTPFlow) -> None:
        headers = flow.request.headers
        named = headers.get(self._session_header) or _proxy_user(headers.get("Proxy-Authorization"))
        if named:
            self._tunnels[flow.client_conn.id] = named

    def record_unparsed(self, message: str) -> str:
        """Record a request mitmproxy could not parse (it answers 400 itself, before any
        hook): no method or URL, so the call names what was wrong. Returns the record id."""
        session = self.runtime.sessions.get(UNPARSED_SESSION)
        call = Call("http", "unknown", "INVALID", {"error": message}, session.id)
        outcome = self.runtime.engine.reject(call, session, policy="http-parser", reason=f"simroute proxy: malformed request: {message}")
        return outcome.record.id

    async def client_disconnected(self, client: connection.Client) -> None:
        self._tunnels.pop(client.id, None)
        await self.runtime.sessions.close(f"http-{client.id[:12]}")

    # --- hooks -----------------------------------------------------------------------------

    async def request(self, flow: http.HTTPFlow) -> None:
        if flow.response is not None:
            return
        try:
            await self._route(flow)
        except Exception as exc:  # the boundary: fail closed (never forward unrouted), the proxy stays up
            log.exception("routing %s %s failed", flow.request.method, flow.request.url)
            real: _RealSide | None = flow.metadata.pop(_REAL, None)
            if real is not None and real.timer is not None:
                real.timer.cancel()
            observation = Observation.error(f"simroute: routing failed: {type(exc).__name__}: {exc}")
            flow.response = _make_response(*response_parts(observation, fallback_status=500), Route.DENY, None)

    async def _route(self, flow: http.HTTPFlow) -> None:
        try:
            session = self.runtime.sessions.get(self.session_id(flow))
        except SessionLimitError as exc:
            flow.response = _make_response(*response_parts(Observation.error(str(exc)), fallback_status=503), Route.DENY, None)
            return
        request = flow.request
        call = make_call(
            method=request.method,
            url=request.url,
            headers=_fields(request.headers),
            body=request.get_content(strict=False) or b"",
            session_id=session.id,
            settings=self.settings,
        )
        engine = self.runtime.engine
        pending = engine.begin(call, session)
        try:
            observation = await engine.serve(pending)
        except Exception as exc:  # recorded like any answer: the agent gets a clear error
            log.exception("routing %s %s failed", call.tool, call.arguments.get("url"))
            observation = Observation.error(f"simroute: routing failed: {type(exc).__name__}: {exc}")
        if observation is None:
            real = flow.metadata[_REAL] = _RealSide(pending, time.perf_counter())
            real.timer = asyncio.get_running_loop().call_later(self.config.timeout_s, self._expire, flow)
            return
        outcome = engine.complete(pending, observation)
        flow.response = _make_response(*response_parts(observation, fallback_status=_fallback_status(outcome)), pending.decision.route, outcome)

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        real: _RealSide | None = flow.metadata.get(_REAL)
        if real is None or flow.response is None:
            return
        response = flow.response
        response.headers[PROVENANCE_HEADER] = "real"
        response.headers[ROUTE_HEADER] = str(real.pending.decision.route)
        if _streams(response, self.config.max_body_bytes):
            # A stream may rightly last long (server-sent events): the deadline was for its start.
            if real.timer is not None:
                real.timer.cancel()
            real.capture = response.stream = BodyCapture(self.config.max_body_bytes)

    def response(self, flow: http.HTTPFlow) -> None:
        real: _RealSide | None = flow.metadata.pop(_REAL, None)
        if real is None or flow.response is None:
            return
        if real.timer is not None:
            real.timer.cancel()
        response = flow.response
        limit = self.config.max_body_bytes
        capture = real.capture
        if capture is not None:
            data, decoded = _decoded(response, capture.data, complete=capture.size <= limit)
            body = encode_body(data, limit=limit) if decoded else encode_body(capture.data, limit=limit, size=capture.size, sha256=capture.sha256)
        else:
            data, decoded = _decoded(response, response.raw_content or b"", complete=True)
            body = encode_body(data, limit=limit)
        structured = response_record(response.status_code, response.reason, _fields(response.headers), body, decoded=decoded)
        observation = observation_of(structured, Provenance.REAL, latency_s=time.perf_counter() - real.started)
        outcome = self.runtime.engine.complete(real.pending, observation, note="streamed" if real.capture is not None else "")
        if real.capture is None:  # not sent yet: the agent sees the record's id too
            response.headers[RECORD_HEADER] = outcome.record.id

    def error(self, flow: http.HTTPFlow) -> None:
        real: _RealSide | None = flow.metadata.pop(_REAL, None)
        if real is None:
            return
        if real.timer is not None:
            real.timer.cancel()
        message = flow.error.msg if flow.error is not None else "unknown error"
        call = real.pending.call
        latency = time.perf_counter() - real.started
        target = f"{call.tool} {call.arguments.get('url')}"
        if flow.response is not None and real.capture is not None:
            # The answer broke off while streaming: what arrived is the record.
            body = encode_body(real.capture.data, limit=self.config.max_body_bytes, size=real.capture.size, sha256=real.capture.sha256)
            structured = response_record(flow.response.status_code, flow.response.reason, _fields(flow.response.headers), body, decoded=False)
            self.runtime.engine.complete(real.pending, observation_of(structured, Provenance.REAL, latency_s=latency), note=f"stream broken: {message}")
            return
        if real.timed_out:
            status, reason = 504, (
                f"simroute: upstream {call.server!r} did not answer {target} within its {self.config.timeout_s:g}s deadline (http.timeout_s)"
            )
        else:
            status, reason = 502, f"simroute: upstream {call.server!r} failed on {target}: {message}"
        errors.replace_next(message, status, reason)
        observation = observation_of(error_structured(status, reason), Provenance.NONE, latency_s=latency)
        self.runtime.engine.complete(real.pending, observation, note="timed out" if real.timed_out else "")

    # --- the real route's deadline --------------------------------------------------------

    def _expire(self, flow: http.HTTPFlow) -> None:
        """No complete answer within the deadline (or, for a stream, no start of one):
        close the upstream connection. mitmproxy then reports the flow's error, and
        `error` answers 504."""
        real: _RealSide | None = flow.metadata.get(_REAL)
        if real is None or real.capture is not None or not flow.live:
            return
        real.timed_out = True
        from mitmproxy import ctx

        handler = ctx.master.addons.get("proxyserver").connections.get(flow.client_conn.id)
        transport = handler.transports.get(flow.server_conn) if handler is not None else None
        if transport is None or transport.handler is None:
            log.warning("deadline of %s passed but its upstream connection is gone", flow.request.url)
            return
        transport.handler.cancel(DEADLINE_MESSAGE)


def _proxy_user(value: str | None) -> str | None:
    if not value:
        return None
    scheme, _, token = value.partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        user = base64.b64decode(token.strip(), validate=True).decode("utf-8").partition(":")[0]
    except (binascii.Error, UnicodeDecodeError):
        return None
    return user or None


def _fields(headers: Any) -> list[tuple[str, str]]:
    return [(k.decode("latin-1"), v.decode("latin-1")) for k, v in headers.fields]


def _streams(response: http.Response, limit: int) -> bool:
    """Pass the body through as it arrives: event streams, bodies of unknown length
    (chunked, or until the connection closes) and bodies over the record limit."""
    headers = response.headers
    if "event-stream" in headers.get("content-type", ""):
        return True
    length = headers.get("content-length")
    if length is None or not length.strip().isdigit():
        return response.status_code not in (204, 304)
    return int(length) > limit


def _decoded(response: http.Response, data: bytes, *, complete: bool) -> tuple[bytes, bool]:
    """The body content-decoded (gzip, br, …) when it is complete and decodes; else as sent."""
    encoding = response.headers.get("content-encoding")
    if not encoding or not complete or not data:
        return data, False
    from mitmproxy.net import encoding as codecs

    try:
        decoded = codecs.decode(data, encoding)
    except ValueError:
        return data, False
    return (decoded, True) if isinstance(decoded, bytes) else (data, False)


def _fallback_status(outcome: Outcome) -> int:
    """The status of an answer with no HTTP form of its own."""
    return 403 if outcome.record.decision.route is Route.DENY else 502


def _make_response(status: int, reason: str, headers: list[tuple[str, str]], body: bytes, route: Route, outcome: Outcome | None) -> http.Response:
    from mitmproxy import http

    response = http.Response.make(status, body, [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers])
    if reason:
        response.reason = reason
    provenance = str(outcome.observation.provenance) if outcome is not None else "none"
    response.headers[PROVENANCE_HEADER] = provenance
    response.headers[ROUTE_HEADER] = str(route)
    if outcome is not None:
        response.headers[RECORD_HEADER] = outcome.record.id
    return response
