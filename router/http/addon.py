"""The mitmproxy addon that routes every HTTP request through the engine.

`request`: the request becomes a `Call` and the engine decides. `sim`, `replay`
and `deny` are answered right there (recorded before the agent sees them); on
`real` and `shadow` the request goes upstream and a deadline is armed. What the
upstream answers (`responseheaders`, `response`, `error`) is recorded by
`real_answers.py`.

Before routing, the request is authenticated (`access.py`), its host and path
normalised (`normalize.py`: the rules, the keys and the upstream see the same
request), and, on its way to the real side, its resolved address checked
(`addresses.py`) and connected to (`pinning.py`). A WebSocket upgrade is a call
like any request (its messages and raw TCP tunnels: `tunnels.py`). Every refusal
is a recorded call (`front_door.py`). A recorded real answer may be followed by a noise
probe (`probes.py`): the same request sent again off the agent's path, whose flow
the hooks leave alone.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from backends.http.decode import decode_bounded
from backends.http.messages import HttpSettings, error_structured, make_call, observation_of, response_parts
from calls import Decision, Observation, Provenance, Route
from records.store.protocol import RecordError
from router.addons.tracing import CallTracer, incoming
from router.config import HttpConfig
from router.engine.real_calls import RealOutcome
from router.engine.sessions import SessionRefusedError
from router.engine.trace_context import inject
from router.http.access import Refused
from router.http.addresses import reach_of
from router.http.flows import fallback_status, fields, make_response, url_of
from router.http.front_door import UNAUTHENTICATED_SESSION, HttpFrontDoor
from router.http.listeners import Listener, RoutingParts
from router.http.normalize import (
    NormalizationError,
    host_header_contradicts,
    normalize_host,
    normalize_path,
    unsafe_header,
    unsupported_version,
)
from router.http.pinning import Pins
from router.http.probes import is_probe, restore_request
from router.http.real_answers import REAL, RealAnswers, RealSide

if TYPE_CHECKING:
    from mitmproxy import connection, http
    from mitmproxy.proxy import server_hooks

    from router.engine.engine import Pending

log = logging.getLogger("simroute.http")

READ_ONLY_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})  # no write-ahead record needed


class HttpRouting:
    def __init__(
        self, parts: RoutingParts, config: HttpConfig, *, listeners: Mapping[str, Listener], master: Any = None
    ) -> None:
        self.config = config
        self.settings = HttpSettings(
            record_headers=tuple(h.lower() for h in config.record_headers),
            max_body_bytes=config.max_body_bytes,
            credential_headers=tuple(h.lower() for h in parts.credential_headers),
            credential_key=parts.secret_key(),
        )
        self.front_door = HttpFrontDoor(parts, listeners)
        self.engine = parts.engine
        self.pins = Pins()
        self.answers = RealAnswers(self.front_door, config, pins=self.pins, master=master)

    # --- connections -----------------------------------------------------------------------

    async def http_connect(self, flow: http.HTTPFlow) -> None:
        try:
            self.front_door.listener(flow.client_conn).gate.connect(flow.client_conn.id, flow.request.headers)
        except Refused as refused:
            await self.front_door.refuse(flow, refused, session_id=UNAUTHENTICATED_SESSION)

    def server_connect(self, data: server_hooks.ServerConnectionHookData) -> None:
        self.pins.server_connect(data.client, data.server)

    async def client_disconnected(self, client: connection.Client) -> None:
        self.pins.forget(client.id)
        session_id = self.front_door.listener(client).gate.forget(client.id)
        if session_id is not None:
            await self.front_door.sessions.close(session_id)

    # --- the request ----------------------------------------------------------------------

    async def request(self, flow: http.HTTPFlow) -> None:
        if is_probe(flow):  # routed and recorded as the agent's call already
            restore_request(flow)
            return
        if flow.response is not None:
            return
        try:
            await self._route(flow)
        except (
            Exception
        ) as exc:  # the front door's last resort: fail closed (never forward unrouted), recorded, the proxy stays up
            log.exception("routing %s %s failed", flow.request.method, flow.request.pretty_url)
            real: RealSide | None = flow.metadata.pop(REAL, None)
            if real is not None and real.timer is not None:
                real.timer.cancel()
            if real is not None:
                await self.answers.release(real, RealOutcome.NEUTRAL)
            refused = Refused(500, "http-routing", f"simroute: routing failed: {type(exc).__name__}: {exc}")
            try:
                await self.front_door.refuse(flow, refused, session_id=f"http-{flow.client_conn.id[:12]}")
            except Exception:  # the same boundary: even the record failed, the request still never goes out
                log.exception("recording a routing failure failed")
                flow.response = make_response(
                    *response_parts(Observation.error(refused.reason), fallback_status=500), Route.DENY, None
                )

    async def _route(self, flow: http.HTTPFlow) -> None:
        listener = self.front_door.listener(flow.client_conn)
        try:
            session_id = listener.gate.session_of(flow.client_conn.id, flow.request.headers)
        except Refused as refused:
            await self.front_door.refuse(flow, refused, session_id=UNAUTHENTICATED_SESSION)
            return
        try:
            session = self.front_door.sessions.get(session_id)
        except SessionRefusedError as exc:
            await self.front_door.refuse(flow, Refused(503, "sessions", str(exc)), session_id=session_id)
            return
        request = flow.request
        version_refusal = unsupported_version(request.http_version, flow.client_conn.alpn)
        if version_refusal is not None:
            await self.front_door.refuse(flow, Refused(505, "http-normalize", version_refusal), session_id=session.id)
            return
        try:
            self._normalize(request, check_host_header=not listener.mode.startswith("reverse"))
        except NormalizationError as exc:
            await self.front_door.refuse(
                flow, Refused(400, "http-normalize", f"simroute proxy: {exc}"), session_id=session.id
            )
            return
        body = decode_bounded(
            request.raw_content or b"", request.headers.get("content-encoding"), max_bytes=self.config.max_decoded_bytes
        )
        call = make_call(
            method=request.method,
            url=url_of(request),
            headers=fields(request.headers, drop_encoding=body.decoded),
            body=body.data,
            session_id=session.id,
            settings=self.settings,
        )
        engine = self.engine
        websocket = request.headers.get("upgrade", "").lower() == "websocket"
        # A WebSocket may carry anything once open: written ahead like any side effect.
        with incoming(
            engine.addons.find(CallTracer), request.headers
        ):  # the call's span continues the request's traceparent
            pending = await engine.begin(call, session, read_only=call.tool in READ_ONLY_METHODS and not websocket)
        if websocket and pending.decision.route in (Route.SIM, Route.REPLAY):
            reason = (
                f"simroute: a WebSocket cannot be {pending.decision.route}ed yet (only let through or refused): "
                f"{pending.decision.reason}"
            )
            outcome = await engine.complete(
                pending, observation_of(error_structured(501, reason), Provenance.NONE), note=body.note()
            )
            flow.response = make_response(
                *response_parts(outcome.observation, fallback_status=501), pending.decision.route, outcome
            )
            return
        observation = await engine.serve(pending)  # a backend that raises answers with an error observation
        if observation is None:
            observation = await self._go_real(flow, pending, listener, note=body.note(), websocket=websocket)
            if observation is None:
                return  # on its way upstream, or refused
        outcome = await engine.complete(pending, observation, note=body.note())
        flow.response = make_response(
            *response_parts(observation, fallback_status=fallback_status(outcome)), pending.decision.route, outcome
        )

    def _normalize(self, request: http.Request, *, check_host_header: bool) -> None:
        """Rules, keys and the upstream see one form of the request (see normalize.py).
        The Host header must name the server connected to (reverse mode rewrites it)."""
        unsafe = unsafe_header(request.headers.fields)
        if unsafe is not None:
            raise NormalizationError(unsafe)
        if not request.path.startswith("/"):  # `GET *` (asterisk form) or a bare word: no resource to route
            raise NormalizationError(
                f"the request target {request.path!r} names no path (a proxy request needs an absolute URL)"
            )
        host = normalize_host(request.host)
        if check_host_header and host_header_contradicts(request.host_header, host, request.port, request.scheme):
            raise NormalizationError(
                f"the Host header {request.host_header!r} names another server "
                f"than the one connected to ({host}:{request.port})"
            )
        if host != request.host:
            request.host = host  # keeps the Host header in step
        path = normalize_path(request.path)
        if path != request.path:
            request.path = path

    async def _go_real(
        self, flow: http.HTTPFlow, pending: Pending, listener: Listener, *, note: str, websocket: bool
    ) -> Observation | None:
        """Send the request upstream, to the address checked for it (`pinning.py`).
        None when it is on its way (or was refused); else the answer it gets instead."""
        call = pending.call
        try:
            refusal = await self._address_refusal(flow, pending.decision, listener)
        except OSError as exc:  # not left to mitmproxy: its own lookup would go unchecked
            reason = f"simroute: upstream {call.server!r} failed on {call.tool} {call.arguments.get('url')}: {exc}"
            return observation_of(error_structured(502, reason), Provenance.NONE)
        if refusal is not None:
            await self.front_door.refuse(flow, refusal, session_id=pending.session.id, call=call)
            return None
        refused = await self.engine.addons.before_real(
            pending, self.config.timeout_s
        )  # the upstream guard: never sent if refused
        if refused is not None:
            await self.engine.addons.after_real(pending, None, RealOutcome.NEUTRAL)
            return refused
        try:
            await self.engine.write_ahead(pending)  # a request with side effects is on record before it leaves
        except RecordError as exc:
            await self.engine.addons.after_real(pending, None, RealOutcome.NEUTRAL)
            return Observation.error(str(exc))
        inject(pending, flow.request.headers)  # tracing on: the upstream's parent is the call's span, in the same trace
        real = flow.metadata[REAL] = RealSide(pending, time.perf_counter(), note=note, websocket=websocket)
        real.timer = asyncio.get_running_loop().call_later(self.config.timeout_s, self.answers.expire, flow)
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

    # --- the answer (real_answers.py) ------------------------------------------------------------

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        self.answers.responseheaders(flow)

    async def response(self, flow: http.HTTPFlow) -> None:
        await self.answers.response(flow)

    async def error(self, flow: http.HTTPFlow) -> None:
        await self.answers.error(flow)
