"""The upstream connection goes to the address that was checked.

The address policy (`addresses.py`) resolves a name and judges its addresses; if
mitmproxy then resolved the name again to connect, a DNS answer that changed in
between (DNS rebinding: public for the check, the metadata service for the
connection) would pass unchecked. So a request on its way to the real side is
pinned: its host becomes the checked address, which mitmproxy connects to (and
matches when it reuses a connection: only one to that same address), while the
Host header and the authority keep the name. A TLS connection must still ask for
the name (SNI) and check the certificate against it: mitmproxy would use the
address there, so `server_connect` puts the name back, just before it connects.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from router.http.addresses import is_ip_literal

if TYPE_CHECKING:
    from mitmproxy import connection, http


class Pins:
    def __init__(self) -> None:
        # client connection id -> {(address, port): the name checked as that address}
        self._names: dict[str, dict[tuple[str, int], str]] = {}

    def pin(self, request: http.Request, client_id: str, addresses: list[str]) -> str | None:
        """Send `request` to the first of its checked `addresses` (the resolver's
        preferred one); returns it, or None when the host needs no pin (an address
        already, or a name not looked up)."""
        if not addresses or is_ip_literal(request.host):
            return None
        address = addresses[0]
        self._names.setdefault(client_id, {})[(address, request.port)] = request.host
        request.data.host = address  # not `request.host`: its setter rewrites the Host header too
        return address

    def server_connect(self, client: connection.Client, server: connection.Server) -> None:
        """Before a pinned TLS connection opens: it asks for the name, not the address
        (the client's own SNI first, as mitmproxy does in a tunnel)."""
        if server.address is None or not server.tls or server.sni != server.address[0]:
            return
        name = self._names.get(client.id, {}).get((server.address[0], int(server.address[1])))
        if name is not None:
            server.sni = client.sni or name

    def names(self, client_id: str) -> dict[tuple[str, int], str]:
        """The names checked for a client connection's pinned addresses (for a request
        sent again on another connection: `lend`)."""
        return self._names.get(client_id, {})

    def lend(self, client_id: str, names: dict[tuple[str, int], str]) -> None:
        """Connection `client_id` (a noise probe's own) reaches pinned addresses under
        these names; `forget` it when it is done."""
        if names:
            self._names[client_id] = names

    def forget(self, client_id: str) -> None:
        self._names.pop(client_id, None)
