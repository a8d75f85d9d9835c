"""mitmproxy, in simroute's process, with the routing addon.

Only the addons the channel needs are loaded (the proxy server, protocol
detection, TLS, the block of non-local clients): no flow display, no scripts.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from router.config import HttpConfig

if TYPE_CHECKING:
    from router.app import Runtime

log = logging.getLogger("simroute.http")


class ProxyStartError(RuntimeError):
    """The proxy could not listen (port taken, bad address)."""


class HttpProxy:
    def __init__(self, runtime: Runtime, config: HttpConfig, *, port: int | None = None) -> None:
        self.runtime = runtime
        self.config = config
        self.port = config.port if port is None else port
        self._master = None
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> HttpProxy:
        from mitmproxy import master, options
        from mitmproxy.addons import block, core, dns_resolver, next_layer, proxyserver, tlsconfig

        from router.http import errors
        from router.http.addon import HttpRouting
        from router.http.ca import ensure_ca

        ca_dir = self.runtime.config.ca_dir
        ensure_ca(ca_dir)
        errors.install()
        routing = HttpRouting(self.runtime, self.config)
        errors.on_unparsed_request = routing.record_unparsed
        opts = options.Options()
        self._master = m = master.Master(opts, with_termlog=False)
        m.addons.add(
            core.Core(), block.Block(), proxyserver.Proxyserver(), dns_resolver.DnsResolver(), next_layer.NextLayer(),
            tlsconfig.TlsConfig(), routing,
        )
        opts.update(
            listen_host=self.config.listen_host,
            listen_port=self.port,
            mode=[self.config.mode],
            confdir=str(ca_dir),
            ssl_insecure=self.config.ssl_insecure,
            http2=self.config.http2,
            http3=False,
            # Connect upstream only when a request goes real: a simulated, replayed or
            # denied HTTPS request needs no reachable upstream (nor DNS for it).
            connection_strategy="lazy",
        )
        self._task = asyncio.get_running_loop().create_task(m.run(), name="simroute-http-proxy")
        servers = m.addons.get("proxyserver").servers
        for _ in range(500):  # the listening sockets open in the master's first steps
            await asyncio.sleep(0.01)
            if self._task.done():
                self._task.result()
            if len(servers) and not servers.is_updating:
                break
        failed = [s for s in servers if not s.is_running]
        if not len(servers) or failed:
            problem = str(failed[0].last_exception).splitlines()[0] if failed else "no server started"
            await self.aclose()
            raise ProxyStartError(f"the HTTP proxy cannot listen on {self.config.listen_host}:{self.port}: {problem}")
        self.port = next(iter(servers)).listen_addrs[0][1]
        log.info("HTTP(S) proxy (%s) listening on %s:%d; CA in %s", self.config.mode, self.config.listen_host, self.port, ca_dir)
        return self

    async def aclose(self) -> None:
        if self._master is not None and self._task is not None:
            self._master.shutdown()
            try:
                await asyncio.wait_for(self._task, 10)
            except TimeoutError:
                log.warning("the HTTP proxy did not stop within 10s")
            self._master = self._task = None
        from router.http import errors

        errors.on_unparsed_request = None
