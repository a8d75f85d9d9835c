"""Which network a request reaches, judged on the resolved address.

Cloud metadata services hand out credentials to whoever asks from inside the
machine; link-local addresses are the same kind of neighbour. Loopback and
private addresses are the user's own services. The HTTP channel refuses the first
kind unless a rule allows them; the browser refuses them always and needs
`browser.allowed_origins` for the second. `classify` is pure; `resolve` is the
one lookup, with a deadline.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from enum import StrEnum
from functools import lru_cache

METADATA_HOSTS = frozenset(
    {
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "instance-data",
        "instance-data.ec2.internal",
        "metadata.azure.internal",
        "metadata.tencentyun.com",
        "metadata.platformequinix.com",
    }
)
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",
        "169.254.170.2",
        "fd00:ec2::254",
        "100.100.100.200",
        "192.0.0.192",
    )
)
RESOLVE_TIMEOUT_S = 5.0


class Reach(StrEnum):
    METADATA = "metadata"
    LINK_LOCAL = "link-local"
    LOOPBACK = "loopback"
    PRIVATE = "private"
    PUBLIC = "public"


_RANK = {Reach.METADATA: 0, Reach.LINK_LOCAL: 1, Reach.LOOPBACK: 2, Reach.PRIVATE: 3, Reach.PUBLIC: 4}


@lru_cache(maxsize=4096)  # pure, and asked again for every request to the same address
def classify(address: str) -> Reach:
    ip = ipaddress.ip_address(address.strip("[]").split("%")[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip in METADATA_ADDRESSES:
        return Reach.METADATA
    if ip.is_link_local:
        return Reach.LINK_LOCAL
    if ip.is_loopback or ip.is_unspecified:  # 0.0.0.0 reaches the local host too
        return Reach.LOOPBACK
    if ip.is_private or ip.is_reserved or ip.is_multicast or (isinstance(ip, ipaddress.IPv4Address) and ip in _CGNAT):
        return Reach.PRIVATE
    return Reach.PUBLIC


_CGNAT = ipaddress.ip_network("100.64.0.0/10")


def most_sensitive(addresses: list[str]) -> Reach:
    """The most sensitive reach among a name's addresses (any of them may be used)."""
    return min((classify(a) for a in addresses), key=_RANK.__getitem__, default=Reach.PUBLIC)


@lru_cache(maxsize=4096)
def is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]").split("%")[0])
    except ValueError:
        return False
    return True


async def reach_of(host: str, port: int) -> tuple[Reach, list[str]]:
    """The reach of `host` (resolved when it is a name) and the addresses it resolved to,
    the preferred first. Raises OSError when the name does not resolve in time."""
    name = host.strip("[]").lower().rstrip(".")
    if name in METADATA_HOSTS:
        return Reach.METADATA, []
    if is_ip_literal(name):
        return classify(name), [name]
    if name == "localhost" or name.endswith(".localhost"):
        return Reach.LOOPBACK, []
    loop = asyncio.get_running_loop()
    try:
        infos = await asyncio.wait_for(loop.getaddrinfo(name, port, type=socket.SOCK_STREAM), RESOLVE_TIMEOUT_S)
    except TimeoutError as exc:
        raise OSError(f"resolving {name} took longer than {RESOLVE_TIMEOUT_S:g}s") from exc
    addresses = list(
        dict.fromkeys(str(info[4][0]) for info in infos)
    )  # the resolver's order: the first is the one to use
    return most_sensitive(addresses), addresses


def origin_allowed(scheme: str, host: str, port: int, allowed: list[str]) -> bool:
    """Whether `scheme://host:port` is one of `allowed` (`scheme://host[:port|:*]`)."""
    host = host.lower().strip("[]")
    for origin in allowed:
        o_scheme, _, rest = origin.partition("://")
        if o_scheme != scheme:
            continue
        if rest.startswith("["):
            o_host, _, tail = rest[1:].partition("]")
            o_port = tail[1:] if tail.startswith(":") else ""
        else:
            o_host, _, o_port = rest.partition(":")
        default = {"http": "80", "https": "443"}[scheme]
        if o_host == host and (o_port == "*" or (o_port or default) == str(port)):
            return True
    return False


class ChannelAddresses:
    """The HTTP channel: metadata and link-local addresses only when a rule routes there."""

    policy = "http-address"

    def refusal(self, reach: Reach, scheme: str, host: str, port: int, *, rule_allows: bool) -> str | None:
        if reach in (Reach.METADATA, Reach.LINK_LOCAL) and not rule_allows:
            return (
                f"simroute: {host} is a {reach} address (cloud metadata and link-local services hand out "
                "credentials); allow it with a rule {match: {channel: http, server: ...}, route: real}"
            )
        return None


class BrowserAddresses:
    """The browser: never metadata or link-local; loopback and private addresses only
    for the origins in `browser.allowed_origins`."""

    policy = "browser-address"

    def __init__(self, allowed_origins: list[str]) -> None:
        self.allowed_origins = list(allowed_origins)

    def refusal(self, reach: Reach, scheme: str, host: str, port: int, *, rule_allows: bool) -> str | None:
        if reach in (Reach.METADATA, Reach.LINK_LOCAL):
            return (
                f"simroute: the browser does not open {reach} addresses ({host}): they serve the machine, not the web"
            )
        if reach in (Reach.LOOPBACK, Reach.PRIVATE) and not origin_allowed(
            _web_scheme(scheme), host, port, self.allowed_origins
        ):
            return (
                f"simroute: {scheme}://{host}:{port} is a {reach} address, and the browser opens those only for the "
                "origins in browser.allowed_origins"
            )
        return None


def _web_scheme(scheme: str) -> str:
    return {"ws": "http", "wss": "https"}.get(scheme, scheme)
