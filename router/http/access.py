"""Who a proxy request comes from: its agent session, and whether it may be served.

- No tokens configured (a loopback bind): as before, the session is the
  `X-Simroute-Session` header, else the Proxy-Authorization user name, else one per
  client connection; no password is asked.
- Tokens configured: Proxy-Authorization `Basic session:TOKEN` is required (407
  otherwise); the session lives in the token's namespace.
- The browser's own proxy: each browser context has its own credential, and the
  session is the context's; a request without one gets 407 (Chromium then answers
  the challenge with the context's credential).

Requests inside an HTTPS tunnel carry no proxy credentials: they belong to the
CONNECT that opened the tunnel. Both headers are removed before forwarding.
"""

from __future__ import annotations

import secrets
from collections.abc import MutableMapping
from dataclasses import dataclass

from router.auth import Tokens, basic_credentials, namespaced

PROXY_AUTHORIZATION = "Proxy-Authorization"
BROWSER_USER = "browser"


class Refused(Exception):
    """A request the proxy answers itself, recorded as a refused call."""

    def __init__(
        self, status: int, policy: str, reason: str, headers: dict[str, str] | None = None, *, record: bool = True
    ) -> None:
        super().__init__(reason)
        self.status, self.policy, self.reason, self.headers = status, policy, reason, headers or {}
        self.record = record  # False: a step of the auth handshake, not a refusal (see _identify)


def _challenge(reason: str, *, record: bool = True) -> Refused:
    return Refused(407, "proxy-auth", reason, {"Proxy-Authenticate": 'Basic realm="simroute"'}, record=record)


class SessionCredentials:
    """One secret per agent session, mapped to it, for simroute's own clients of its
    proxy: a browser context (the browser pool hands the secret to the context) and an
    episode's HTTP requests (router/episodes). The username says which kind."""

    def __init__(self, user: str = BROWSER_USER) -> None:
        self.user = user
        self._sessions: dict[str, str] = {}

    def issue(self, session_id: str) -> dict[str, str]:
        secret = secrets.token_urlsafe(24)
        self._sessions[secret] = session_id
        return {"username": self.user, "password": secret}

    def revoke(self, credential: dict[str, str]) -> None:
        self._sessions.pop(credential.get("password", ""), None)

    def session_of(self, user: str, password: str) -> str | None:
        return self._sessions.get(password) if user == self.user else None


@dataclass(slots=True)
class _Tunnel:
    token: str | None
    session: str


class ProxyGate:
    def __init__(
        self,
        *,
        session_header: str,
        tokens: Tokens,
        browser: SessionCredentials | None = None,
        issued: SessionCredentials | None = None,
    ) -> None:
        self.session_header = session_header
        self.tokens = tokens
        self.browser = browser
        # Credentials simroute issued to its own clients (an episode's HTTP requests): valid
        # whatever the tokens, since the session they name is already in its namespace.
        self.issued = issued
        self._tunnels: MutableMapping[str, _Tunnel] = {}
        self._per_connection: dict[str, str] = {}  # client id -> its connection session (closed with it)

    @property
    def required(self) -> bool:
        return self.browser is not None or self.tokens.enabled

    def connect(self, client_id: str, headers) -> None:
        """Authenticate a CONNECT; requests and raw bytes inside its tunnel belong to it."""
        named = headers.get(self.session_header)
        authorization = headers.get(PROXY_AUTHORIZATION)
        token, session = self._identify(client_id, named, authorization, tunnel=None)
        if session is not None:
            self._tunnels[client_id] = _Tunnel(token, session)

    def session_of(self, client_id: str, headers) -> str:
        """The session of a request (its proxy headers removed). Raises Refused (407)."""
        named = headers.pop(self.session_header, None)
        authorization = headers.pop(PROXY_AUTHORIZATION, None)
        token, session = self._identify(client_id, named, authorization, tunnel=self._tunnels.get(client_id))
        return session if session is not None else self._connection_session(client_id, token)

    def tunnel_session(self, client_id: str) -> str:
        """The session of a raw tunnel (its CONNECT's, else the connection's)."""
        tunnel = self._tunnels.get(client_id)
        return tunnel.session if tunnel is not None else self._connection_session(client_id, None)

    def forget(self, client_id: str) -> str | None:
        """Drop a closed client's tunnel; returns its connection session, if one was opened."""
        self._tunnels.pop(client_id, None)
        return self._per_connection.pop(client_id, None)

    def _identify(
        self, client_id: str, named: str | None, authorization: str | None, *, tunnel: _Tunnel | None
    ) -> tuple[str | None, str | None]:
        """(token name, session or None for the connection's own)."""
        credentials = basic_credentials(authorization)
        if credentials is not None and self.issued is not None:
            session = self.issued.session_of(*credentials)
            if session is not None:
                return None, session
        if self.browser is not None:
            session = self.browser.session_of(*credentials) if credentials else None
            if session is None and tunnel is not None and authorization is None:
                session = tunnel.session
            if session is None:
                # Chromium sends a context's credential only when challenged: a first request
                # without one is the handshake, not a refusal (a wrong credential is recorded).
                raise _challenge(
                    "simroute's browser proxy needs the browser context's credential", record=credentials is not None
                )
            return None, session
        if not self.tokens.enabled:
            user = credentials[0] if credentials else None
            return None, named or user or (tunnel.session if tunnel is not None else None)
        if credentials is not None:
            token = self.tokens.name_of(credentials[1])
            if token is None:
                raise _challenge("simroute proxy: the Proxy-Authorization token is not valid")
            session = named or credentials[0]
            return token, namespaced(token, session) if session else None
        if tunnel is not None:
            return tunnel.token, namespaced(tunnel.token, named) if named else tunnel.session
        raise _challenge(
            "simroute proxy: authentication required: Proxy-Authorization Basic SESSION:TOKEN (SIMROUTE_TOKEN)"
        )

    def _connection_session(self, client_id: str, token: str | None) -> str:
        session = self._per_connection.get(client_id)
        if session is None:
            session = self._per_connection[client_id] = namespaced(token, f"http-{client_id[:12]}")
        return session
