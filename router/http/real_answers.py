"""The real route's answers: what comes back from the upstream, recorded.

`responseheaders`: the upstream answered; the provenance headers are added and a
streaming or large body is passed through as it arrives, its first
`max_body_bytes` kept for the record. `response`: the record is written (before
the agent sees a buffered response; when complete for a streamed one), then a
noise probe may follow (`probes.py`). `error`: an upstream that is down, too slow
or broken is recorded, and the agent gets a JSON reason (see `errors.py`); so is
a request body over `http.max_request_bytes` (413, see `mitmproxy_patches.py`).
`expire`: the real route's deadline.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from backends.http.decode import Decoded, decode_bounded
from backends.http.messages import (
    PERTURBATION_HEADER,
    PROVENANCE_HEADER,
    RECORD_HEADER,
    ROUTE_HEADER,
    SAFETY_HEADER,
    SOURCE_HEADER,
    BodyCapture,
    encode_body,
    error_structured,
    observation_of,
    response_parts,
    response_record,
)
from calls import ANSWER_KINDS, Call, Observation, Provenance
from router.config import HttpConfig
from router.engine.real_calls import RealOutcome
from router.http import errors, mitmproxy_patches
from router.http.access import Refused
from router.http.flows import fields, make_response, server_of, streams, url_of
from router.http.front_door import UNAUTHENTICATED_SESSION, HttpFrontDoor
from router.http.pinning import Pins
from router.http.probes import PROBE, is_probe, sender
from router.http.stream_cuts import StreamCut, cut_stream
from router.http.tunnels import open_websocket

if TYPE_CHECKING:
    from mitmproxy import http

    from router.engine.engine import Pending

log = logging.getLogger("simroute.http")

REAL = "simroute.real"  # flow.metadata key of a request on its way to the real upstream
DEADLINE_MESSAGE = "simroute: deadline for the upstream's answer passed"


@dataclass(slots=True)
class RealSide:
    pending: Pending
    started: float
    timer: asyncio.TimerHandle | None = None
    capture: BodyCapture | None = None
    timed_out: bool = False
    note: str = ""  # remarks for the record (a request body whose decoding was cut)
    websocket: bool = False
    cut: StreamCut | None = None  # a streamed body cut by a perturbation (empty, truncate)
    bracketed: bool = (
        True  # the addons' `after_real` still owed (the upstream guard's slot, released when the answer is in)
    )


class RealAnswers:
    def __init__(self, front_door: HttpFrontDoor, config: HttpConfig, *, pins: Pins, master: Any = None) -> None:
        self.front_door = front_door
        self.config = config
        self.pins = pins
        self.master = master

    async def release(self, real: RealSide, outcome: RealOutcome) -> None:
        """Free the upstream guard's slot of `real` and tell its breaker how the upstream did (once)."""
        if real.bracketed:
            real.bracketed = False
            await self.front_door.engine.addons.after_real(real.pending, None, outcome)

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        if is_probe(flow) and flow.response is not None:
            if streams(flow.response, self.config.max_body_bytes):  # kept as the real route keeps it
                flow.metadata[PROBE].capture = flow.response.stream = BodyCapture(self.config.max_body_bytes)
            return
        real: RealSide | None = flow.metadata.get(REAL)
        if real is None or flow.response is None:
            return
        response = flow.response
        response.headers[PROVENANCE_HEADER] = "real"
        # A real answer has no source: an upstream's own header of that name would pass for simroute's.
        response.headers.pop(SOURCE_HEADER, None)
        response.headers[ROUTE_HEADER] = str(real.pending.decision.route)
        if real.pending.decision.safety:
            response.headers[SAFETY_HEADER] = real.pending.decision.safety
        if real.pending.perturbation is not None:
            response.headers[PERTURBATION_HEADER] = json.dumps(real.pending.perturbation.meta(), separators=(",", ":"))
        if response.status_code == 101:
            if real.timer is not None:
                real.timer.cancel()
            return
        if streams(response, self.config.max_body_bytes):
            # A stream may rightly last long (server-sent events): the deadline was for its start.
            if real.timer is not None:
                real.timer.cancel()
            real.capture = BodyCapture(self.config.max_body_bytes)
            # empty, truncate: cut as it passes (stream_cuts.py); else passed whole.
            real.cut = cut_stream(response, real.pending.perturbation, real.capture)
            response.stream = real.cut or real.capture

    async def response(self, flow: http.HTTPFlow) -> None:
        real: RealSide | None = flow.metadata.pop(REAL, None)
        if real is None or flow.response is None:
            return
        if real.timer is not None:
            real.timer.cancel()
        response = flow.response
        await self.release(real, RealOutcome.FAILURE if response.status_code >= 500 else RealOutcome.SUCCESS)
        limit = self.config.max_body_bytes
        capture = real.capture
        if response.status_code == 101 and real.websocket:
            # Recorded when the socket closes, with what passed through it.
            structured = response_record(
                101, response.reason, fields(response.headers), encode_body(b"", limit=limit), decoded=False
            )
            open_websocket(flow, real.pending, real.started, real.note, structured)
            return
        observation, decoded = self._observation(response, capture, real.started)
        note = "; ".join(n for n in (real.note, "streamed" if capture is not None else "", decoded.note()) if n)
        perturbation = real.pending.perturbation
        if real.cut is not None:  # cut as it streamed: the record holds what the agent got, the real body beside it
            real.pending.unperturbed, observation = (
                observation,
                self._observation(response, real.cut.sent, real.started)[0],
            )
            observation.provenance = Provenance.NONE
        elif capture is not None and perturbation is not None and perturbation.kind in ANSWER_KINDS:
            # The body went to the agent as it came: the record says what the agent got.
            real.pending.perturbation = None
            note += f"; perturbation {perturbation.kind} ({perturbation.rule}) not applied: the body streamed"
        engine = self.front_door.engine
        outcome = await engine.complete(real.pending, observation, note=note)
        if real.capture is None and real.pending.unperturbed is not None:
            # A perturbation changed the answer (empty, truncate): the agent gets the changed one.
            flow.response = make_response(
                *response_parts(outcome.observation, fallback_status=502), real.pending.decision.route, outcome
            )
        elif real.capture is None:  # not sent yet: the agent sees the record's id too
            response.headers[RECORD_HEADER] = outcome.record.id
        engine.probe(real.pending, outcome.record, self._probe(flow))

    def _observation(
        self, response: http.Response, capture: BodyCapture | None, started: float
    ) -> tuple[Observation, Decoded]:
        """A real answer as the record holds it (the agent's and a noise probe's alike)."""
        limit = self.config.max_body_bytes
        encoding = response.headers.get("content-encoding")
        if capture is not None:
            decoded = self._decode(capture.data, encoding) if capture.size <= limit else Decoded(capture.data, False)
            body = (
                encode_body(decoded.data, limit=limit)
                if decoded.decoded
                else encode_body(capture.data, limit=limit, size=capture.size, sha256=capture.sha256)
            )
        else:
            decoded = self._decode(response.raw_content or b"", encoding)
            body = encode_body(decoded.data, limit=limit)
        structured = response_record(
            response.status_code, response.reason, fields(response.headers), body, decoded=decoded.decoded
        )
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
        real: RealSide | None = flow.metadata.pop(REAL, None)
        if real is None:
            if flow.error is not None and flow.error.msg == mitmproxy_patches.REQUEST_TOO_LARGE:
                await self._refuse_large_request(flow)
            return
        if real.timer is not None:
            real.timer.cancel()
        message = flow.error.msg if flow.error is not None else "unknown error"
        # An upstream that broke off a stream it had started, or a client that left, says
        # nothing of the upstream's health; no answer at all (refused, reset, too slow) does.
        broken_off = (flow.response is not None and real.capture is not None) or "client" in message.lower()
        await self.release(real, RealOutcome.NEUTRAL if broken_off else RealOutcome.FAILURE)
        call = real.pending.call
        latency = time.perf_counter() - real.started
        target = f"{call.tool} {call.arguments.get('url')}"
        engine = self.front_door.engine
        if flow.response is not None and real.capture is not None:
            # The answer broke off while streaming: what arrived is the record.
            body = encode_body(
                real.capture.data, limit=self.config.max_body_bytes, size=real.capture.size, sha256=real.capture.sha256
            )
            structured = response_record(
                flow.response.status_code, flow.response.reason, fields(flow.response.headers), body, decoded=False
            )
            await engine.complete(
                real.pending,
                observation_of(structured, Provenance.REAL, latency_s=latency),
                note=f"stream broken: {message}",
            )
            return
        if real.timed_out:
            status, reason = (
                504,
                (
                    f"simroute: upstream {call.server!r} did not answer {target} "
                    f"within its {self.config.timeout_s:g}s deadline (http.timeout_s)"
                ),
            )
        else:
            status, reason = 502, f"simroute: upstream {call.server!r} failed on {target}: {message}"
        errors.replace_next(message, status, reason)
        observation = observation_of(error_structured(status, reason), Provenance.NONE, latency_s=latency)
        await engine.complete(real.pending, observation, note="timed out" if real.timed_out else "")

    async def _refuse_large_request(self, flow: http.HTTPFlow) -> None:
        """Over `http.max_request_bytes`: mitmproxy stopped reading; the 413 says why."""
        try:
            session_id = self.front_door.listener(flow.client_conn).gate.session_of(
                flow.client_conn.id, flow.request.headers
            )
        except Refused:
            session_id = UNAUTHENTICATED_SESSION
        size = flow.request.headers.get("content-length", "unknown")
        reason = (
            f"simroute proxy: the request body ({size} bytes) is over http.max_request_bytes "
            f"({self.config.max_request_bytes}); it was not routed"
        )
        session = self.front_door.transient_or_open(session_id)
        request = flow.request
        call = Call(
            "http",
            server_of(flow),
            request.method.upper(),
            {"method": request.method.upper(), "url": url_of(request), "body_size": size},
            session.id,
        )
        outcome = await self.front_door.record_refusal(call, session, policy="http-body-limit", reason=reason)
        errors.replace_next(mitmproxy_patches.REQUEST_TOO_LARGE, 413, reason, record_id=outcome.record.id)
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

    def expire(self, flow: http.HTTPFlow) -> None:
        """No complete answer within the deadline (or, for a stream, no start of one):
        close the upstream connection. mitmproxy then reports the flow's error, and
        `error` answers 504."""
        real: RealSide | None = flow.metadata.get(REAL)
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
