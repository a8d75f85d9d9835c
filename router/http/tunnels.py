"""What passes after (or instead of) an HTTP exchange: raw TCP tunnels and WebSockets.

**Raw TCP: a tunnel is a call.**
After a CONNECT, mitmproxy relays bytes that are neither TLS nor HTTP as raw TCP
(its `TCPLayer`, chosen by `next_layer` once the client's first bytes arrive). The
upstream connection is opened lazily, after `tcp_start`: a refused tunnel is
killed there (the server connection gets an error before it connects), so not one
byte reaches the target. A tunnel a rule lets through (`tool: TCP`, route `real`)
is recorded when it ends, with its byte counts. A client that sends nothing at all
(the server speaks first: SMTP, SSH) gets the same layer once
`http.tunnel_first_bytes_s` has passed (`mitmproxy_patches.install_silent_tunnels`).

**WebSockets.** The upgrade is routed like any request (`addon.py`); on the real
route, the messages are counted per direction and the first `http.max_body_bytes`
kept, and the call is recorded with them when the socket closes.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from backends.http.messages import encode_body, observation_of
from calls import Call, Observation, Provenance, Route
from policies.tunnels import TCP_TOOL
from records.store.protocol import RecordError
from router.config import HttpConfig
from router.http.addresses import is_ip_literal, reach_of
from router.http.front_door import HttpFrontDoor
from router.http.listeners import Listener
from router.http.mitmproxy_patches import SILENT_CLIENT

if TYPE_CHECKING:
    from mitmproxy import http, tcp

    from router.engine.engine import Pending

log = logging.getLogger("simroute.http")

_TUNNEL = "simroute.tunnel"  # flow.metadata key of a tunnel let through
_WEBSOCKET = "simroute.websocket"  # flow.metadata key of an open WebSocket on the real route


@dataclass(slots=True)
class _Tunnel:
    pending: Pending
    started: float
    counts: dict[str, int] = field(default_factory=lambda: {"from_client": 0, "from_server": 0, "messages": 0})


@dataclass(slots=True)
class _Socket:
    """An open WebSocket on the real route: its handshake answer and what passed, per direction."""

    pending: Pending
    started: float
    note: str
    structured: dict[str, Any]
    counts: dict[str, list[int]] = field(
        default_factory=lambda: {"client": [0, 0], "server": [0, 0]}
    )  # messages, bytes
    kept: list[dict[str, Any]] = field(default_factory=list)
    kept_bytes: int = 0


def open_websocket(
    flow: http.HTTPFlow, pending: Pending, started: float, note: str, structured: dict[str, Any]
) -> None:
    """The upgrade was answered 101 on the real route: record the call when the socket closes."""
    flow.metadata[_WEBSOCKET] = _Socket(pending, started, note, structured)


class TunnelRouting:
    """Shares the HTTP addon's front door: its gates (sessions) and refusal recording."""

    def __init__(self, front_door: HttpFrontDoor, config: HttpConfig) -> None:
        self.front_door = front_door
        self.engine = front_door.engine
        self.config = config

    async def tcp_start(self, flow: tcp.TCPFlow) -> None:
        try:
            await self._gate(flow)
        except Exception as exc:  # the front door's last resort for a tunnel: fail closed, it never connects
            log.exception("routing a raw TCP tunnel failed")
            flow.metadata.pop(_TUNNEL, None)
            flow.server_conn.error = f"simroute: routing failed: {type(exc).__name__}: {exc}"

    async def _gate(self, flow: tcp.TCPFlow) -> None:
        address = flow.server_conn.address
        if address is None:
            flow.server_conn.error = "simroute: a raw TCP tunnel with no destination is refused"
            return
        host, port = address[0], int(address[1])
        listener = self.front_door.listener(flow.client_conn)
        session = self.front_door.transient_or_open(listener.gate.tunnel_session(flow.client_conn.id))
        server = f"[{host}]:{port}" if ":" in host else f"{host.lower()}:{port}"
        arguments = {"address": server, "tls": flow.client_conn.tls_established, "sni": flow.client_conn.sni}
        call = Call("http", server, TCP_TOOL, arguments, session.id)
        pending = await self.engine.begin(call, session)
        decision = pending.decision
        if decision.route is Route.REAL:
            reason = await self._address_refusal(flow, host, port, decision.policy, listener)
            if reason is None:
                try:
                    await self.engine.write_ahead(pending)  # on record before a byte goes through
                except RecordError as exc:
                    flow.server_conn.error = str(exc)
                    return
                flow.metadata[_TUNNEL] = _Tunnel(pending, time.perf_counter())
                return
            policy = listener.addresses.policy
        elif decision.route is Route.DENY:
            policy, reason = decision.policy, f"simroute denied this call ({decision.policy}): {decision.reason}"
            if SILENT_CLIENT in flow.metadata:
                reason += (
                    f" (the client sent nothing within {flow.metadata[SILENT_CLIENT]:g}s of the CONNECT: "
                    "a raw TCP tunnel)"
                )
        else:
            policy = "http-tcp"
            reason = (
                "simroute: a raw TCP tunnel is let through (real) or refused; "
                f"it has no {decision.route} form ({decision.reason})"
            )
        # Before the upstream connection opens: mitmproxy sees the error and closes the client.
        flow.server_conn.error = reason
        await self.front_door.record_refusal(call, session, policy=policy, reason=reason)

    async def _address_refusal(
        self, flow: tcp.TCPFlow, host: str, port: int, policy: str, listener: Listener
    ) -> str | None:
        """Judge the address the tunnel would reach and, when allowed, connect to that
        very address (a second lookup could answer another one: see pinning.py)."""
        try:
            reach, addresses = await reach_of(host, port)
        except OSError as exc:
            return f"simroute: {host} does not resolve: {exc}"
        reason = listener.addresses.refusal(reach, "tcp", host, port, rule_allows=policy.startswith("rules:"))
        if reason is None and addresses and not is_ip_literal(host):
            flow.server_conn.address = (addresses[0], port)
        return reason

    def tcp_message(self, flow: tcp.TCPFlow) -> None:
        tunnel: _Tunnel | None = flow.metadata.get(_TUNNEL)
        if tunnel is None or not flow.messages:
            return
        message = flow.messages[-1]
        tunnel.counts["from_client" if message.from_client else "from_server"] += len(message.content)
        tunnel.counts["messages"] += 1
        # mitmproxy keeps every message of a flow: a long tunnel would grow without bound.
        flow.messages.clear()

    async def tcp_end(self, flow: tcp.TCPFlow) -> None:
        await self._finish(flow, None)

    async def tcp_error(self, flow: tcp.TCPFlow) -> None:
        await self._finish(flow, flow.error.msg if flow.error is not None else "unknown error")

    async def _finish(self, flow: tcp.TCPFlow, error: str | None) -> None:
        tunnel: _Tunnel | None = flow.metadata.pop(_TUNNEL, None)
        if tunnel is None:
            return
        counts = dict(tunnel.counts)
        text = (
            f"TCP {tunnel.pending.call.server}: {counts['from_client']} bytes sent, "
            f"{counts['from_server']} bytes received"
        )
        if error:
            text += f"; ended with an error: {error}"
        observation = Observation(
            content=[{"type": "text", "text": text}],
            provenance=Provenance.REAL,
            is_error=error is not None,
            structured={
                "bytes_from_client": counts["from_client"],
                "bytes_from_server": counts["from_server"],
                "messages": counts["messages"],
                **({"error": error} if error else {}),
            },
            latency_s=time.perf_counter() - tunnel.started,
        )
        await self.engine.complete(tunnel.pending, observation, note="tunnel closed")

    # --- WebSockets on the real route ---------------------------------------------------

    def websocket_message(self, flow: http.HTTPFlow) -> None:
        socket: _Socket | None = flow.metadata.get(_WEBSOCKET)
        if socket is None or flow.websocket is None or not flow.websocket.messages:
            return
        message = flow.websocket.messages[-1]
        side = "client" if message.from_client else "server"
        counts = socket.counts[side]
        counts[0] += 1
        counts[1] += len(message.content)
        if socket.kept_bytes < self.config.max_body_bytes:
            piece = message.content[: self.config.max_body_bytes - socket.kept_bytes]
            socket.kept_bytes += len(piece)
            text = piece.decode("utf-8", "replace") if message.is_text else None
            socket.kept.append(
                {"from": side, **({"text": text} if text is not None else {"binary_bytes": len(message.content)})}
            )
        # mitmproxy keeps every message of a flow: a long-lived socket would grow without bound.
        flow.websocket.messages.clear()

    async def websocket_end(self, flow: http.HTTPFlow) -> None:
        socket: _Socket | None = flow.metadata.pop(_WEBSOCKET, None)
        if socket is None:
            return
        ws = flow.websocket
        summary = {
            "messages": socket.kept,
            "from_client": {"messages": socket.counts["client"][0], "bytes": socket.counts["client"][1]},
            "from_server": {"messages": socket.counts["server"][0], "bytes": socket.counts["server"][1]},
            "close_code": ws.close_code if ws is not None else None,
        }
        text = json.dumps(summary, ensure_ascii=False)
        structured = {
            **socket.structured,
            **encode_body(text.encode(), limit=max(len(text.encode()), 1)),
            "websocket": summary,
        }
        observation = observation_of(structured, Provenance.REAL, latency_s=time.perf_counter() - socket.started)
        note = "; ".join(n for n in (socket.note, "websocket closed") if n)
        await self.engine.complete(socket.pending, observation, note=note)
