"""The mitmproxy addon that routes every HTTP request through the engine.

`request`: the request becomes a `Call` and the engine decides. `sim`, `replay`
and `deny` are answered right there (recorded before the agent sees them); on
`real` and `shadow` the request goes upstream and a deadline is armed.
`responseheaders`: the upstream answered; the provenance headers are added and
a streaming or large body is passed through as it arrives, its first
`max_body_bytes` kept for the record. `response`: the record is written
(before the agent sees a buffered response; when complete for a streamed one).
`error`: an upstream that is down, too slow or broken is recorded, and the agent
gets a JSON reason (see `errors.py`); so is a request body over
`http.max_request_bytes` (413, see `limits.py`).

Before routing, the request is authenticated (`access.py`), its host and path
normalised (`normalize.py`: the rules, the keys and the upstream see the same
request), and, on its way to the real side, its resolved address checked
(`addresses.py`) and connected to (`pinning.py`). A WebSocket upgrade is a call like any request (its messages
and raw TCP tunnels: `tunnels.py`). Every refusal is a recorded call (`_record_refusal`).
A recorded real answer may be followed by a noise probe (`probes.py`): the same
request sent again off the agent's path, whose flow the hooks leave alone.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from backends.http.decode import Decoded, decode_bounded
from router.config import HttpConfig
from router.http import errors, limits
from router.http.access import Refused
from router.http.addresses import reach_of
from router.http.pinning import Pins
from router.http.probes import PROBE, is_probe, restore_request, sender
from router.http.tunnels import open_websocket
from router.http.normalize import NormalizationError, host_header_contradicts, normalize_host, normalize_path
from shadow.compare.http_canonical import authority
from backends.http.messages import (
    PROVENANCE_HEADER,
    RECORD_HEADER,
    ROUTE_HEADER,
    SAFETY_HEADER,
    BodyCapture,
    HttpSettings,
    encode_body,
    error_structured,
    make_call,
    observation_of,
    response_parts,
    response_record,
)
from router.engine.sessions import SessionLimitError
from router.types import Call, Decision, Observation, Provenance, Route, Session
from shadow.records import new_record_id
from shadow.store.protocol import RecordError

if TYPE_CHECKING:
    from mitmproxy import connection, http
    from mitmproxy.proxy import server_hooks

    from router.runtime.runtime import Runtime
    from router.engine.engine import Outcome, Pending
    from router.http.proxy import Listener

log = logging.getLogger("simroute.http")

_REAL = "simroute.real"  # flow.metadata key of a request on its way to the real upstream
DEADLINE_MESSAGE = "simroute: deadline for the upstream's answer passed"
UNPARSED_SESSION = "http-unparsed"  # the agent session of requests too malformed to carry one
READ_ONLY_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})  # no write-ahead record needed
UNAUTHENTICATED_SESSION = "http-unauthenticated"  # the session of refused credentials


@dataclass(slots=True)
class _RealSide:
    pending: Pending
    started: float
    timer: asyncio.TimerHandle | None = None
    capture: BodyCapture | None = None
    timed_out: bool = False
    note: str = ""  # remarks for the record (a request body whose decoding was cut)
    websocket: bool = False


class HttpRouting:
    def __init__(self, runtime: Runtime, config: HttpConfig, *, listeners: Mapping[str, Listener], master: Any = None) -> None:
        self.runtime = runtime
        self.config = config
        self.settings = HttpSettings(
            record_headers=tuple(h.lower() for h in config.record_headers),
            max_body_bytes=config.max_body_bytes,
            credential_headers=tuple(h.lower() for h in runtime.config.replay.credential_headers),
            credential_key=runtime.secret_key,
        )
        self.listeners = dict(listeners)
        self.master = master
        self.pins = Pins()
        self._tasks: set[asyncio.Task] = set()

    def listener(self, client: connection.Client) -> Listener:
        """The door a connection came in by (its gate and address policy)."""
        mode = client.proxy_mode
        listener = self.listeners.get(mode.full_spec) if mode is not None else None
        return listener or next(iter(self.listeners.values()))

    # --- refusals ------------------------------------------------------------------------

    async def _record_refusal(self, call: Call, session: Session, *, policy: str, reason: str) -> Outcome:
        """Every refusal of the HTTP channel (and its tunnels) is recorded here, before the client sees it."""
        return await self.runtime.engine.reject(call, session, policy=policy, reason=reason)

    def _transient_or_open(self, session_id: str) -> Session:
        """The open session, or (past the session cap) a transient one that only carries
        the refusal's record."""
        try:
            return self.runtime.sessions.get(session_id)
        except SessionLimitError:
            return Session(id=session_id)

    async def _refuse(self, flow: http.HTTPFlow, refused: Refused, *, session_id: str, call: Call | None = None) -> None:
        """Answer `flow` with a recorded refusal."""
        outcome = None
        if refused.record:
            session = self._transient_or_open(session_id)
            if call is None:
                request = flow.request
                call = Call("http", _server_of(flow), request.method.upper(), {"method": request.method.upper(), "url": _url_of(request)}, session.id)
            outcome = await self._record_refusal(call, session, policy=refused.policy, reason=refused.reason)
        structured = error_structured(refused.status, refused.reason)
        status, reason, headers, body = response_parts(observation_of(structured, Provenance.NONE), fallback_status=refused.status)
        flow.response = _make_response(status, reason, [*headers, *refused.headers.items()], body, Route.DENY, outcome)

    def record_unparsed(self, message: str) -> str:
        """Record a request mitmproxy could not parse (it answers 400 itself, before any
        hook, from synchronous code): no method or URL, so the call names what was
        wrong. The record is written by a kept task a moment later; returns its id."""
        session = self._transient_or_open(UNPARSED_SESSION)
        call = Call("http", "unknown", "INVALID", {"error": message}, session.id)
        record_id = new_record_id()
        reason = f"simroute proxy: malformed request: {message}"
        task = asyncio.get_running_loop().create_task(
            self.runtime.engine.reject(call, session, policy="http-parser", reason=reason, record_id=record_id), name="simroute-http-record"
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return record_id

    # --- connections -----------------------------------------------------------------------

    async def http_connect(self, flow: http.HTTPFlow) -> None:
        try:
            self.listener(flow.client_conn).gate.connect(flow.client_conn.id, flow.request.headers)
        except Refused as refused:
            await self._refuse(flow, refused, session_id=UNAUTHENTICATED_SESSION)

    def server_connect(self, data: server_hooks.ServerConnectionHookData) -> None:
        self.pins.server_connect(data.client, data.server)

    async def client_disconnected(self, client: connection.Client) -> None:
        self.pins.forget(client.id)
        session_id = self.listener(client).gate.forget(client.id)
        if session_id is not None:
            await self.runtime.sessions.close(session_id)

    # --- hooks -----------------------------------------------------------------------------

    async def request(self, flow: http.HTTPFlow) -> None:
        if is_probe(flow):  # routed and recorded as the agent's call already
            restore_request(flow)
            return
        if flow.response is not None:
            return
        try:
            await self._route(flow)
        except Exception as exc:  # the boundary: fail closed (never forward unrouted), recorded, the proxy stays up
            log.exception("routing %s %s failed", flow.request.method, flow.request.pretty_url)
            real: _RealSide | None = flow.metadata.pop(_REAL, None)
            if real is not None and real.timer is not None:
                real.timer.cancel()
            refused = Refused(500, "http-routing", f"simroute: routing failed: {type(exc).__name__}: {exc}")
            try:
                await self._refuse(flow, refused, session_id=f"http-{flow.client_conn.id[:12]}")
            except Exception:  # even the record failed: the request still never goes out
                log.exception("recording a routing failure failed")
                flow.response = _make_response(*response_parts(Observation.error(refused.reason), fallback_status=500), Route.DENY, None)

    async def _route(self, flow: http.HTTPFlow) -> None:
        listener = self.listener(flow.client_conn)
        try:
            session_id = listener.gate.session_of(flow.client_conn.id, flow.request.headers)
        except Refused as refused:
            await self._refuse(flow, refused, session_id=UNAUTHENTICATED_SESSION)
            return
        try:
            session = self.runtime.sessions.get(session_id)
        except SessionLimitError as exc:
            await self._refuse(flow, Refused(503, "sessions", str(exc)), session_id=session_id)
            return
        request = flow.request
        try:
            self._normalize(request, check_host_header=not listener.mode.startswith("reverse"))
        except NormalizationError as exc:
            await self._refuse(flow, Refused(400, "http-normalize", f"simroute proxy: {exc}"), session_id=session.id)
            return
        body = decode_bounded(request.raw_content or b"", request.headers.get("content-encoding"), max_bytes=self.config.max_decoded_bytes)
        call = make_call(
            method=request.method,
            url=_url_of(request),
            headers=_fields(request.headers, drop_encoding=body.decoded),
            body=body.data,
            session_id=session.id,
            settings=self.settings,
        )
        engine = self.runtime.engine
        websocket = request.headers.get("upgrade", "").lower() == "websocket"
        # A WebSocket may carry anything once open: written ahead like any side effect.
        pending = await engine.begin(call, session, read_only=call.tool in READ_ONLY_METHODS and not websocket)
        if websocket and pending.decision.route in (Route.SIM, Route.REPLAY):
            reason = f"simroute: a WebSocket cannot be {pending.decision.route}ed yet (only let through or refused): {pending.decision.reason}"
            outcome = await engine.complete(pending, observation_of(error_structured(501, reason), Provenance.NONE), note=body.note())
            flow.response = _make_response(*response_parts(outcome.observation, fallback_status=501), pending.decision.route, outcome)
            return
        observation = await engine.serve(pending)  # a backend that raises answers with an error observation
        if observation is None:
            observation = await self._go_real(flow, pending, listener, note=body.note(), websocket=websocket)
            if observation is None:
                return  # on its way upstream, or refused
        outcome = await engine.complete(pending, observation, note=body.note())
        flow.response = _make_response(*response_parts(observation, fallback_status=_fallback_status(outcome)), pending.decision.route, outcome)

    def _normalize(self, request: http.Request, *, check_host_header: bool) -> None:
        """Rules, keys and the upstream see one form of the request (see normalize.py).
        The Host header must name the server connected to (reverse mode rewrites it)."""
        host = normalize_host(request.host)
        if check_host_header and host_header_contradicts(request.host_header, host, request.port, request.scheme):
            raise NormalizationError(
                f"the Host header {request.host_header!r} names another server than the one connected to ({host}:{request.port})"
            )
        if host != request.host:
            request.host = host  # keeps the Host header in step
        path = normalize_path(request.path)
        if path != request.path:
            request.path = path

    async def _go_real(self, flow: http.HTTPFlow, pending: Pending, listener: Listener, *, note: str, websocket: bool) -> Observation | None:
        """Send the request upstream, to the address checked for it (`pinning.py`).
        None when it is on its way (or was refused); else the answer it gets instead."""
        call = pending.call
        try:
            refusal = await self._address_refusal(flow, pending.decision, listener)
        except OSError as exc:  # not left to mitmproxy: its own lookup would go unchecked
            reason = f"simroute: upstream {call.server!r} failed on {call.tool} {call.arguments.get('url')}: {exc}"
            return observation_of(error_structured(502, reason), Provenance.NONE)
        if refusal is not None:
            await self._refuse(flow, refusal, session_id=pending.session.id, call=call)
            return None
        try:
            await self.runtime.engine.write_ahead(pending)  # a request with side effects is on record before it leaves
        except RecordError as exc:
            return Observation.error(str(exc))
        real = flow.metadata[_REAL] = _RealSide(pending, time.perf_counter(), note=note, websocket=websocket)
        real.timer = asyncio.get_running_loop().call_later(self.config.timeout_s, self._expire, flow)
        return None

    async def _address_refusal(self, flow: http.HTTPFlow, decision: Decision, listener: Listener) -> Refused | None:
        """Judge the address a real request would reach (resolved, when a name), and
        pin the request to it. Raises OSError when the name does not resolve."""
        request = flow.request
        reach, addresses = await reach_of(request.host, request.port)
        rule_allows = decision.policy.startswith("rules:") and decision.route is not Route.DENY
        reason = listener.addresses.refusal(reach, request.scheme, request.host, request.port, rule_allows=rule_allows)
        if reason:
            return Refused(403, listener.addresses.policy, reason)
        self.pins.pin(request, flow.client_conn.id, addresses)
        return None

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        if is_probe(flow) and flow.response is not None:
            if _streams(flow.response, self.config.max_body_bytes):  # kept as the real route keeps it
                flow.metadata[PROBE].capture = flow.response.stream = BodyCapture(self.config.max_body_bytes)
            return
        real: _RealSide | None = flow.metadata.get(_REAL)
        if real is None or flow.response is None:
            return
        response = flow.response
        response.headers[PROVENANCE_HEADER] = "real"
        response.headers[ROUTE_HEADER] = str(real.pending.decision.route)
        if real.pending.decision.safety:
            response.headers[SAFETY_HEADER] = real.pending.decision.safety
        if response.status_code == 101:
            if real.timer is not None:
                real.timer.cancel()
            return
        if _streams(response, self.config.max_body_bytes):
            # A stream may rightly last long (server-sent events): the deadline was for its start.
            if real.timer is not None:
                real.timer.cancel()
            real.capture = response.stream = BodyCapture(self.config.max_body_bytes)

    async def response(self, flow: http.HTTPFlow) -> None:
        real: _RealSide | None = flow.metadata.pop(_REAL, None)
        if real is None or flow.response is None:
            return
        if real.timer is not None:
            real.timer.cancel()
        response = flow.response
        limit = self.config.max_body_bytes
        capture = real.capture
        if response.status_code == 101 and real.websocket:
            # Recorded when the socket closes, with what passed through it.
            structured = response_record(101, response.reason, _fields(response.headers), encode_body(b"", limit=limit), decoded=False)
            open_websocket(flow, real.pending, real.started, real.note, structured)
            return
        observation, decoded = self._observation(response, capture, real.started)
        note = "; ".join(n for n in (real.note, "streamed" if capture is not None else "", decoded.note()) if n)
        engine = self.runtime.engine
        outcome = await engine.complete(real.pending, observation, note=note)
        if real.capture is None:  # not sent yet: the agent sees the record's id too
            response.headers[RECORD_HEADER] = outcome.record.id
        engine.probe(real.pending, outcome.record, self._probe(flow))

    def _observation(self, response: http.Response, capture: BodyCapture | None, started: float) -> tuple[Observation, Decoded]:
        """A real answer as the record holds it (the agent's and a noise probe's alike)."""
        limit = self.config.max_body_bytes
        encoding = response.headers.get("content-encoding")
        if capture is not None:
            decoded = self._decode(capture.data, encoding) if capture.size <= limit else Decoded(capture.data, False)
            body = encode_body(decoded.data, limit=limit) if decoded.decoded else encode_body(capture.data, limit=limit, size=capture.size, sha256=capture.sha256)
        else:
            decoded = self._decode(response.raw_content or b"", encoding)
            body = encode_body(decoded.data, limit=limit)
        structured = response_record(response.status_code, response.reason, _fields(response.headers), body, decoded=decoded.decoded)
        return observation_of(structured, Provenance.REAL, latency_s=time.perf_counter() - started), decoded

    def _probe(self, flow: http.HTTPFlow) -> Callable[[], Awaitable[Observation]]:
        """How a noise probe of `flow` gets its answer, should the engine make one."""
        send = sender(flow, self.pins, self.master.options if self.master is not None else None)

        async def again() -> Observation:
            started = time.perf_counter()
            probe = await send()
            assert probe.response is not None
            return self._observation(probe.response, probe.metadata[PROBE].capture, started)[0]

        return again

    def _decode(self, data: bytes, encoding: str | None) -> Decoded:
        return decode_bounded(data, encoding, max_bytes=self.config.max_decoded_bytes)

    async def error(self, flow: http.HTTPFlow) -> None:
        if is_probe(flow):  # its sender sees the error
            return
        real: _RealSide | None = flow.metadata.pop(_REAL, None)
        if real is None:
            if flow.error is not None and flow.error.msg == limits.REQUEST_TOO_LARGE:
                await self._refuse_large_request(flow)
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
            await self.runtime.engine.complete(real.pending, observation_of(structured, Provenance.REAL, latency_s=latency), note=f"stream broken: {message}")
            return
        if real.timed_out:
            status, reason = 504, (
                f"simroute: upstream {call.server!r} did not answer {target} within its {self.config.timeout_s:g}s deadline (http.timeout_s)"
            )
        else:
            status, reason = 502, f"simroute: upstream {call.server!r} failed on {target}: {message}"
        errors.replace_next(message, status, reason)
        observation = observation_of(error_structured(status, reason), Provenance.NONE, latency_s=latency)
        await self.runtime.engine.complete(real.pending, observation, note="timed out" if real.timed_out else "")

    async def _refuse_large_request(self, flow: http.HTTPFlow) -> None:
        """Over `http.max_request_bytes`: mitmproxy stopped reading; the 413 says why."""
        try:
            session_id = self.listener(flow.client_conn).gate.session_of(flow.client_conn.id, flow.request.headers)
        except Refused:
            session_id = UNAUTHENTICATED_SESSION
        size = flow.request.headers.get("content-length", "unknown")
        reason = (
            f"simroute proxy: the request body ({size} bytes) is over http.max_request_bytes "
            f"({self.config.max_request_bytes}); it was not routed"
        )
        session = self._transient_or_open(session_id)
        request = flow.request
        call = Call("http", _server_of(flow), request.method.upper(), {"method": request.method.upper(), "url": _url_of(request), "body_size": size}, session.id)
        outcome = await self._record_refusal(call, session, policy="http-body-limit", reason=reason)
        errors.replace_next(limits.REQUEST_TOO_LARGE, 413, reason, record_id=outcome.record.id)
        # mitmproxy answers and stops reading, but leaves the socket open while the client
        # is still sending: closed here once the 413 is out, so neither side hangs.
        writer = self._client_writer(flow.client_conn.id)
        if writer is not None:
            asyncio.get_running_loop().call_later(0.2, writer.close)

    def _client_writer(self, client_id: str) -> Any:
        handler = self.master.addons.get("proxyserver").connections.get(client_id) if self.master is not None else None
        transport = handler.transports.get(handler.client) if handler is not None else None
        return transport.writer if transport is not None else None

    # --- the real route's deadline --------------------------------------------------------

    def _expire(self, flow: http.HTTPFlow) -> None:
        """No complete answer within the deadline (or, for a stream, no start of one):
        close the upstream connection. mitmproxy then reports the flow's error, and
        `error` answers 504."""
        real: _RealSide | None = flow.metadata.get(_REAL)
        if real is None or real.capture is not None or not flow.live:
            return
        real.timed_out = True
        if self.master is None:
            return
        handler = self.master.addons.get("proxyserver").connections.get(flow.client_conn.id)
        transport = handler.transports.get(flow.server_conn) if handler is not None else None
        if transport is None or transport.handler is None:
            log.warning("deadline of %s passed but its upstream connection is gone", flow.request.url)
            return
        transport.handler.cancel(DEADLINE_MESSAGE)


def _url_of(request: http.Request) -> str:
    """The request's URL (mitmproxy's `url` leaves an IPv6 host unbracketed)."""
    return f"{request.scheme}://{authority(request.scheme, request.host, request.port)}{request.path}"


def _server_of(flow: http.HTTPFlow) -> str:
    request = flow.request
    return authority(request.scheme, request.host or "unknown", request.port)


def _fields(headers: Any, *, drop_encoding: bool = False) -> list[tuple[str, str]]:
    fields = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in headers.fields]
    return [(k, v) for k, v in fields if k.lower() != "content-encoding"] if drop_encoding else fields


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
        if outcome.record.decision.safety:
            response.headers[SAFETY_HEADER] = outcome.record.decision.safety
    return response
