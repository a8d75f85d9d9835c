"""A tunnel whose client stays silent is a raw TCP tunnel.

After a CONNECT, mitmproxy picks the tunnel's protocol from the client's first
bytes (TLS, HTTP, else raw TCP), and asks only when bytes arrive. A protocol where
the server speaks first (SMTP, SSH, many databases) sends none: the tunnel would
sit undecided, unrouted and unrecorded until mitmproxy's idle timeout. Here the
tunnel's undecided layer asks for a wake-up `http.tunnel_first_bytes_s` after the
CONNECT; a client still silent then is given the raw TCP layer, and so goes
through `TunnelRouting.tcp_start` like any raw tunnel: refused before it connects
unless a rule (`tool: TCP`) lets it through, and recorded either way.

Pinned to mitmproxy 12.2.3 (see pyproject.toml); `install()` fails loudly if the
method it wraps is gone.
"""

from __future__ import annotations

DEFAULT_WAIT_S = 2.5
SILENT_CLIENT = "simroute.silent_client"  # TCPFlow.metadata key: decided by the wait, not by bytes

wait_s = DEFAULT_WAIT_S  # set by the proxy from http.tunnel_first_bytes_s


def install(first_bytes_s: float) -> None:
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
            self.child_layer = _layer_class()(self.context)
        return (yield from original(self))

    handle_connect_finish.simroute = True  # type: ignore[attr-defined]
    HttpStream.handle_connect_finish = handle_connect_finish


_class = None


def _layer_class():
    """`FirstBytes`, defined once mitmproxy is imported (simroute imports it lazily)."""
    global _class
    if _class is not None:
        return _class
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

    _class = FirstBytes
    return _class
