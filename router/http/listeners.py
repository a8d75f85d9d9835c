"""The proxy's front doors and what the routing addons are built with.

`Listener`: one mitmproxy listener per front door (the HTTP channel, the browser's own
traffic), naming its gate (who may use it, which session) and its address policy;
the addons pick them by the listener a flow arrived on.

`RoutingParts`: the parts of the runtime the addons route with, handed over
explicitly (the HTTP channel knows the engine and the sessions, never the runtime
that assembles them).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from router.engine.engine import Engine
from router.engine.sessions import SessionRegistry
from router.http.access import ProxyGate, SessionCredentials
from router.http.addresses import BrowserAddresses, ChannelAddresses


@dataclass(slots=True)
class Listener:
    name: str  # "http" (the channel) or "browser"
    mode: str  # mitmproxy's mode: regular, reverse:URL, upstream:URL
    host: str
    port: int
    gate: ProxyGate
    addresses: ChannelAddresses | BrowserAddresses

    @property
    def spec(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.mode}@{host}:{self.port}"


@dataclass(frozen=True, slots=True)
class RoutingParts:
    engine: Engine  # decides, serves and records every call
    sessions: SessionRegistry  # the agent sessions, shared with the other channels
    # The key of credential digests in replay keys: loaded with the store, after the
    # proxy is built, so read when the addon is (the proxy starts after the store opens).
    secret_key: Callable[[], bytes | None]
    credential_headers: tuple[str, ...]  # replay.credential_headers
    ca_dir: Path  # the CA that signs the intercepted certificates
    # Credentials simroute issues its own clients of the HTTP channel (an episode's requests).
    issued: SessionCredentials | None = None
