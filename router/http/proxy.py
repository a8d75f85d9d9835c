"""mitmproxy, in simroute's process, with the routing addons.

Only the addons the channel needs are loaded (the proxy server, protocol
detection, TLS, the block of non-local clients): no flow display, no scripts.

One mitmproxy master per process (mitmproxy keeps its master in a global), with
one listener per front door: the HTTP channel (`simroute http-proxy`, `serve`) and the
browser's own traffic (loopback, an ephemeral port, the browser's credentials and
address policy). Each listener names its gate (who may use it, which session) and
its address policy; the addons pick them by the listener a flow arrived on.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from router.config import HttpConfig
from router.http import errors, mitmproxy_patches
from router.http.addon import HttpRouting
from router.http.ca import CAError, ensure_ca
from router.http.listeners import Listener, RoutingParts
from router.http.tunnels import TunnelRouting

if TYPE_CHECKING:
    from mitmproxy.master import Master

log = logging.getLogger("simroute.http")


class ProxyStartError(RuntimeError):
    """The proxy could not listen (port taken, bad address)."""


class HttpProxy:
    def __init__(self, parts: RoutingParts, config: HttpConfig, listeners: list[Listener]) -> None:
        self.parts = parts
        self.config = config
        self.listeners = {listener.spec: listener for listener in listeners}
        self.ports: dict[str, int] = {}  # listener name -> the port it got
        self._master: Master | None = None
        self._task: asyncio.Task[None] | None = None
        self._starting = asyncio.Lock()
        self._routing: HttpRouting | None = None

    @property
    def started(self) -> bool:
        return self._master is not None

    async def start(self) -> HttpProxy:
        async with self._starting:
            if self._master is None:
                await self._start()
        return self

    async def _start(self) -> None:
        from mitmproxy import master, options
        from mitmproxy.addons import block, core, dns_resolver, next_layer, proxyserver, tlsconfig

        ca_dir = self.parts.ca_dir
        try:
            ensure_ca(ca_dir)
        except (CAError, OSError) as exc:
            raise ProxyStartError(str(exc)) from exc
        mitmproxy_patches.install(self.config.tunnel_first_bytes_s)
        opts = options.Options()
        self._master = m = master.Master(opts, with_termlog=False)
        self._routing = routing = HttpRouting(self.parts, self.config, listeners=self.listeners, master=m)
        errors.on_unparsed_request = routing.front_door.record_unparsed
        m.addons.add(
            core.Core(),
            block.Block(),
            proxyserver.Proxyserver(),
            dns_resolver.DnsResolver(),
            next_layer.NextLayer(),
            tlsconfig.TlsConfig(),
            routing,
            TunnelRouting(routing.front_door, self.config),
        )
        opts.update(
            mode=list(self.listeners),
            # Request bodies over the limit get 413 before routing (responses are not bounded: mitmproxy_patches.py).
            body_size_limit=str(self.config.max_request_bytes),
            confdir=str(ca_dir),
            ssl_insecure=self.config.ssl_insecure,
            http2=self.config.http2,
            http3=False,
            # Connect upstream only when a request goes real: a simulated, replayed or
            # denied HTTPS request needs no reachable upstream (nor DNS for it), and a
            # raw tunnel is refused before it connects.
            connection_strategy="lazy",
        )
        self._task = asyncio.get_running_loop().create_task(m.run(), name="simroute-http-proxy")
        servers = m.addons.get("proxyserver").servers
        for _ in range(500):  # the listening sockets open in the master's first steps
            await asyncio.sleep(0.01)
            if self._task.done():
                self._task.result()
            if len(servers) == len(self.listeners) and not servers.is_updating:
                break
        failed = [s for s in servers if not s.is_running]
        if len(servers) != len(self.listeners) or failed:
            problem = str(failed[0].last_exception).splitlines()[0] if failed else "no server started"
            listener = self.listeners.get(failed[0].mode.full_spec) if failed else None
            where = f"{listener.host}:{listener.port}" if listener else ", ".join(self.listeners)
            await self.aclose()
            raise ProxyStartError(f"the HTTP proxy cannot listen on {where}: {problem}")
        for server in servers:
            listener = self.listeners[server.mode.full_spec]
            self.ports[listener.name] = server.listen_addrs[0][1]
            if listener.name == "http":
                log.info(
                    "HTTP(S) proxy (%s) listening on %s:%d; CA in %s",
                    listener.mode,
                    listener.host,
                    self.ports["http"],
                    ca_dir,
                )

    async def aclose(self) -> None:
        if self._master is not None and self._task is not None:
            self._master.shutdown()
            try:
                await asyncio.wait_for(self._task, 10)
            except TimeoutError:
                log.warning("the HTTP proxy did not stop within 10s")
        self._master = self._task = None
        if self._routing is not None and errors.on_unparsed_request == self._routing.front_door.record_unparsed:
            errors.on_unparsed_request = None
        self._routing = None
