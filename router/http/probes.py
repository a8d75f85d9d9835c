"""Noise probes of the HTTP channel: a real request known read-only, sent once more
off the agent's path, its answer for the noise learner (see shadow/noise_learner.py;
the engine decides which calls are probed).

The probe goes through mitmproxy's own client replay (`ReplayHandler`, the machinery
of its `replay.client` command), not through a second HTTP client. The request is
then sent by the code that sent the agent's: to the address checked and pinned for
it (`pinning.py`: the probe's connection gets the same names, so TLS asks for the
name), with the master's TLS options (`http.ssl_insecure`, the CA settings), its
HTTP/2 setting and body limits, through the upstream proxy of the listener the
request came in by, and past the same addon hooks. A second client would have to
copy each of these settings, and would silently miss the next one.

The replayed flow passes the addon's hooks like any flow: `is_probe` tells them to
leave it alone (no routing, no record, no session step), except for streaming a
large answer through a `BodyCapture` as the real route does.

Pinned to mitmproxy 12.2.3 (see pyproject.toml).
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from backends.http.messages import BodyCapture

if TYPE_CHECKING:
    from mitmproxy import http

    from router.http.pinning import Pins

PROBE = "simroute.probe"  # flow.metadata key of a noise probe


@dataclass(slots=True)
class ProbeState:
    host_header: str | None  # what the agent's request sent: reverse mode would rewrite it to the pinned address
    capture: BodyCapture | None = None  # a large or streaming answer, as the real route keeps it


class ProbeFailed(Exception):
    """The probe got no answer (mitmproxy's error for its flow)."""


def is_probe(flow: http.HTTPFlow) -> bool:
    return PROBE in flow.metadata


def restore_request(flow: http.HTTPFlow) -> None:
    """In the `request` hook: the probe sends the Host the agent's request sent (in reverse
    mode, mitmproxy's replay would name the pinned address instead)."""
    state: ProbeState = flow.metadata[PROBE]
    if state.host_header is not None and flow.request.host_header != state.host_header:
        flow.request.host_header = state.host_header


def sender(flow: http.HTTPFlow, pins: Pins, options: Any) -> Callable[[], Awaitable[http.HTTPFlow]]:
    """Sends `flow`'s request again, when called (its answer is the returned flow's
    response; raises ProbeFailed without one). What the agent's connection knows is
    taken now: it may be closed when the probe runs."""
    request, client, names = flow.request, flow.client_conn, pins.names(flow.client_conn.id)

    async def send() -> http.HTTPFlow:
        from mitmproxy import connection
        from mitmproxy import http as mhttp

        # A connection of its own: the agent's connection and session are not the probe's.
        probe_client = client.copy()
        probe_client.id = str(uuid.uuid4())
        probe = mhttp.HTTPFlow(probe_client, connection.Server(address=None))
        probe.request = request.copy()
        probe.is_replay = "request"
        probe.metadata[PROBE] = ProbeState(request.host_header)
        pins.lend(probe_client.id, names)
        handler = _handler(probe, options)
        try:
            await handler.replay()
        finally:  # answered, failed or past its deadline: its upstream connection closes
            pins.forget(probe_client.id)
            for io in handler.transports.values():
                if io.handler is not None:
                    io.handler.cancel()
        if probe.response is None:
            raise ProbeFailed(probe.error.msg if probe.error is not None else "no answer")
        return probe

    return send


def _handler(flow: http.HTTPFlow, options: Any) -> Any:
    """mitmproxy's replay of `flow`, through the upstream proxy of the listener its
    client came in by: mitmproxy's own takes the first listener's mode for every flow
    (the HTTP channel's, where the browser's listener may chain `browser.proxy`)."""
    from mitmproxy.addons.clientplayback import MockServer, ReplayHandler
    from mitmproxy.proxy import layers
    from mitmproxy.proxy.layers.http import HTTPMode
    from mitmproxy.proxy.mode_specs import UpstreamMode

    handler = ReplayHandler(flow, options)
    context = handler.layer.context
    mode = flow.client_conn.proxy_mode
    upstream = isinstance(mode, UpstreamMode)
    context.server.via = flow.server_conn.via = (mode.scheme, mode.address) if isinstance(mode, UpstreamMode) else None
    handler.layer = layers.HttpLayer(context, HTTPMode.upstream if upstream else HTTPMode.transparent)
    handler.layer.connections[handler.client] = MockServer(flow, context.fork())
    return handler
