"""The runtime's HTTP proxy: one per runtime, with a listener per front door (the HTTP
channel's port, and the browser's own egress when the browser channel is on)."""

from __future__ import annotations

from router.auth import Tokens
from router.config import Config
from router.http.access import ProxyGate, SessionCredentials
from router.http.addresses import BrowserAddresses, ChannelAddresses
from router.http.browser_egress import BrowserEgress
from router.http.listeners import Listener, RoutingParts
from router.http.proxy import HttpProxy


def build_proxy(
    parts: RoutingParts, config: Config, http_channel_port: int | None, tokens: Tokens
) -> tuple[HttpProxy | None, BrowserEgress | None]:
    """One proxy per runtime, with a listener per front door (see router/http/proxy.py and listeners.py)."""
    listeners = []
    if http_channel_port is not None:
        gate = ProxyGate(session_header=config.http.session_header, tokens=tokens, issued=parts.issued)
        listeners.append(
            Listener("http", config.http.mode, config.http.listen_host, http_channel_port, gate, ChannelAddresses())
        )
    credentials = addresses = None
    if config.browser.enabled:
        credentials, addresses = SessionCredentials(), BrowserAddresses(config.browser.allowed_origins)
        # browser.proxy: the browser's traffic still passes simroute first, then that proxy.
        mode = f"upstream:{config.browser.proxy}" if config.browser.proxy else "regular"
        gate = ProxyGate(session_header=config.http.session_header, tokens=tokens, browser=credentials)
        listeners.append(Listener("browser", mode, "127.0.0.1", 0, gate, addresses))
    if not listeners:
        return None, None
    proxy = HttpProxy(parts, config.http, listeners)
    egress = BrowserEgress(proxy, credentials, addresses) if credentials is not None and addresses is not None else None
    return proxy, egress
