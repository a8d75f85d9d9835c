"""The browser's only way out: simroute's HTTP channel, in process.

Chromium's every request (pages, sub-resources, fetches, WebSockets, service
workers) goes through a loopback listener of simroute's own proxy, each browser
context with its own credential, so each request is routed and recorded as an
HTTP call of the agent session that owns the context, under the browser's
address policy (no metadata or link-local addresses; loopback and private ones
only for `browser.allowed_origins`). A contained browser (browser.isolation:
container) has no network: it reaches this listener through a unix socket
relayed to it (backends/browser/proxy_socket.py), its only way out; nothing
changes here.

Chromium trusts the proxy's certificates by the CA's public key alone
(`--ignore-certificate-errors-spki-list`): certificate errors are ignored only for
chains carrying simroute's CA, which only the proxy (whose upstream leg verifies
the real server's certificate) presents.
"""

from __future__ import annotations

import base64
import hashlib
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from router.http.access import SessionCredentials
from router.http.addresses import BrowserAddresses, reach_of
from router.http.ca import certificate_path

if TYPE_CHECKING:
    from router.http.proxy import HttpProxy


class BrowserEgress:
    def __init__(self, proxy: HttpProxy, credentials: SessionCredentials, addresses: BrowserAddresses) -> None:
        self.proxy = proxy
        self.credentials = credentials
        self.addresses = addresses

    async def proxy_server(self) -> str:
        """The listener's URL, the proxy started if it is not yet."""
        await self.proxy.start()
        return f"http://127.0.0.1:{self.proxy.ports['browser']}"

    def credential(self, session_id: str) -> dict[str, str]:
        return self.credentials.issue(session_id)

    def revoke(self, credential: dict[str, str]) -> None:
        self.credentials.revoke(credential)

    def chromium_args(self) -> list[str]:
        from cryptography import x509
        from cryptography.hazmat.primitives import serialization

        cert = x509.load_pem_x509_certificate(certificate_path(self.proxy.parts.ca_dir).read_bytes())
        spki = cert.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        return [f"--ignore-certificate-errors-spki-list={base64.b64encode(hashlib.sha256(spki).digest()).decode()}"]

    async def refusal(self, url: str) -> str | None:
        """Why a navigation's address is refused (the proxy refuses it too; this names
        the rule in the agent's observation instead of a network error page)."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            return None
        port = parts.port or (443 if parts.scheme == "https" else 80)
        try:
            reach, _ = await reach_of(parts.hostname, port)
        except OSError:
            return None  # Chromium reports the name that does not resolve
        return self.addresses.refusal(reach, parts.scheme, parts.hostname, port, rule_allows=False)
