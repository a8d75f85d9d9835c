"""Every change simroute makes to mitmproxy's own classes, in one place.

mitmproxy 12.2.3 (pinned in pyproject.toml) has no option or addon hook for these
three behaviours, so simroute replaces one function or method each, process-wide,
when its proxy starts (`install`). Each patch fails loudly if what it replaces is
gone, marks its replacement (`simroute = True`) so installing twice is harmless,
and has a unit test (tests/unit/router/http/test_mitmproxy_patches.py) that fails when the
pinned mitmproxy changes the patched code.

- `install_error_pages`: mitmproxy's own error answers in simroute's JSON form.
- `install_request_body_limit`: `body_size_limit` bounds requests only.
- `install_silent_tunnels`: a CONNECT tunnel whose client stays silent becomes raw TCP.
"""

from __future__ import annotations

from router.http import errors

REQUEST_TOO_LARGE = "Request body exceeds mitmproxy's body_size_limit."  # mitmproxy's flow error for it
SILENT_CLIENT = "simroute.silent_client"  # TCPFlow.metadata key: decided by the wait, not by bytes
DEFAULT_WAIT_S = 2.5

wait_s = DEFAULT_WAIT_S  # set by the proxy from http.tunnel_first_bytes_s


def install(tunnel_first_bytes_s: float) -> None:
    install_error_pages()
    install_request_body_limit()
    install_silent_tunnels(tunnel_first_bytes_s)


def install_error_pages() -> None:
    """Replaces `mitmproxy.proxy.layers.http._http1.make_error_response`.

    mitmproxy answers a malformed request (400), an unreachable upstream, a TLS
    failure or a broken upstream connection (502) with an HTML page of its own,
    written by its HTTP/1 layer after the `error` hook has run (the hook cannot
    answer instead; a malformed request reaches no hook at all). The replacement
    writes `errors.error_response`: JSON with a reason and `X-Simroute-Provenance:
    none`, as every other answer of simroute's, or what the addon asked for
    (`errors.replace_next`)."""
    from mitmproxy.proxy.layers.http import _http1

    current = getattr(_http1, "make_error_response", None)
    if current is None:
        raise RuntimeError("mitmproxy's HTTP/1 layer has no make_error_response: simroute needs mitmproxy 12.2.3")
    if getattr(current, "simroute", False):
        return

    def make_error_response(status_code: int, message: str = "") -> bytes:
        return errors.error_response(status_code, message)

    make_error_response.simroute = True  # type: ignore[attr-defined]
    make_error_response.__wrapped__ = current  # type: ignore[attr-defined]  # mitmproxy's own, for inspection
    _http1.make_error_response = make_error_response


def install_request_body_limit() -> None:
    """Wraps `mitmproxy.proxy.layers.http.HttpStream.check_body_size`.

    mitmproxy's `body_size_limit` bounds requests and responses alike, and buffers
    a request body whole before the `request` hook. simroute wants the request
    bound (413 before routing, with nothing buffered beyond the limit, chunked or
    not) but responses passing through as they always did (large ones stream).
    The wrapper keeps mitmproxy's check for requests and skips it for responses;
    the proxy sets `body_size_limit` to `http.max_request_bytes`."""
    from mitmproxy.proxy.layers.http import HttpStream

    original = getattr(HttpStream, "check_body_size", None)
    if original is None:
        raise RuntimeError("mitmproxy's HttpStream has no check_body_size: simroute needs mitmproxy 12.2.3")
    if getattr(original, "simroute", False):
        return

    def check_body_size(self, request: bool):
        if not request:
            return False  # responses: as with no limit (simroute streams large ones itself)
        return (yield from original(self, request))

    check_body_size.simroute = True  # type: ignore[attr-defined]
    check_body_size.__wrapped__ = original  # type: ignore[attr-defined]  # mitmproxy's own, for inspection
    HttpStream.check_body_size = check_body_size  # type: ignore[method-assign]  # the patch itself


def install_silent_tunnels(first_bytes_s: float) -> None:
    """Wraps `mitmproxy.proxy.layers.http.HttpStream.handle_connect_finish`.

    After a CONNECT, mitmproxy picks the tunnel's protocol from the client's first
    bytes (TLS, HTTP, else raw TCP), and asks only when bytes arrive. A protocol
    where the server speaks first (SMTP, SSH, many databases) sends none: the
    tunnel would sit undecided, unrouted and unrecorded until mitmproxy's idle
    timeout. The wrapper gives the tunnel an undecided layer (`FirstBytes`) that
    asks for a wake-up `http.tunnel_first_bytes_s` after the CONNECT; a client
    still silent then is given the raw TCP layer, and so goes through
    `TunnelRouting.tcp_start` like any raw tunnel: refused before it connects
    unless a rule (`tool: TCP`) lets it through, and recorded either way."""
    global wait_s
    from mitmproxy.proxy import layer
    from mitmproxy.proxy.layers.http import HttpStream

    wait_s = first_bytes_s
    original = getattr(HttpStream, "handle_connect_finish", None)
    if original is None:
        raise RuntimeError("mitmproxy's HttpStream has no handle_connect_finish: simroute needs mitmproxy 12.2.3")
    if getattr(original, "simroute", False):
        return

    def handle_connect_finish(self):
        # Only the tunnel of a plain CONNECT (regular mode): upstream mode chains another proxy.
        if type(self.child_layer) is layer.NextLayer:
            self.child_layer = first_bytes_layer()(self.context)
        return (yield from original(self))

    handle_connect_finish.simroute = True  # type: ignore[attr-defined]
    handle_connect_finish.__wrapped__ = original  # type: ignore[attr-defined]  # mitmproxy's own, for inspection
    HttpStream.handle_connect_finish = handle_connect_finish  # type: ignore[method-assign]  # the patch itself


_first_bytes_class = None


def first_bytes_layer():
    """`FirstBytes`, defined once mitmproxy is imported (simroute imports it lazily)."""
    global _first_bytes_class
    if _first_bytes_class is not None:
        return _first_bytes_class
    from mitmproxy.proxy import commands, events, layer
    from mitmproxy.proxy.layers import TCPLayer

    class FirstBytes(layer.NextLayer):
        """mitmproxy's undecided layer, plus a deadline for the client's first bytes."""

        def __init__(self, context) -> None:
            super().__init__(context)
            self._wakeup = commands.RequestWakeup(wait_s)

        def handle_event(self, event):
            if isinstance(event, events.Wakeup) and event.command is self._wakeup and self.layer is not None:
                return  # decided by the client's bytes: the chosen layer must not see our timer
            yield from super().handle_event(event)

        def _handle_event(self, event):
            if isinstance(event, events.Start):
                yield self._wakeup
            elif isinstance(event, events.Wakeup) and event.command is self._wakeup:
                closed = any(isinstance(e, events.ConnectionClosed) for e in self.events)
                if self.layer is None and not closed and not self.data_client():
                    tcp = TCPLayer(self.context)
                    assert tcp.flow is not None
                    tcp.flow.metadata[SILENT_CLIENT] = wait_s
                    self.layer = tcp
                    yield from self._ask()
                return
            yield from super()._handle_event(event)

        def _ask(self):
            yield from super()._ask()
            if self.layer is not None:
                # NextLayer hands every later event straight to the chosen layer; keep our
                # filter in front of it (a pending timer would reach a layer that rejects it).
                self.__dict__.pop("handle_event", None)
                chosen = self.layer.handle_event

                def after(event):
                    if isinstance(event, events.Wakeup) and event.command is self._wakeup:
                        return
                    yield from chosen(event)

                self._handle_event = after  # type: ignore[method-assign]
                self._handle = after

    _first_bytes_class = FirstBytes
    return _first_bytes_class
