"""Who may talk to simroute: tokens, the rule for binds beyond loopback, and
session ids namespaced by token.

Tokens come from `SIMROUTE_TOKEN` (named `default`) and `service.tokens`. With none,
simroute serves only loopback binds and asks for nothing (a developer's own
machine); with any, every network front door asks for one. A session id named by
a caller lives in its token's namespace: another token naming the same session
gets a separate session (its own sandbox, browser, history and records).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass

TOKEN_ENV = "SIMROUTE_TOKEN"
ENV_TOKEN_NAME = "default"
_LOOPBACK_NAMES = frozenset({"localhost", "localhost.", "ip6-localhost"})


class AuthConfigError(ValueError):
    """The service may not start as configured (e.g. a network bind without a token)."""


@dataclass(frozen=True, slots=True)
class Tokens:
    """The configured tokens, looked up by digest (a dict lookup, not a loop of compares:
    the presented token is hashed first, so timing says nothing about its prefix)."""

    _names: Mapping[bytes, str]

    @classmethod
    def of(cls, named: Mapping[str, str]) -> Tokens:
        return cls({_digest(token): name for name, token in named.items()})

    @property
    def enabled(self) -> bool:
        return bool(self._names)

    @property
    def names(self) -> frozenset[str]:
        return frozenset(self._names.values())

    def name_of(self, presented: str | None) -> str | None:
        """The name of a valid token, else None."""
        if not presented:
            return None
        return self._names.get(_digest(presented))

    def bearer(self, authorization: str | None) -> str | None:
        """The token name of an `Authorization: Bearer TOKEN` header value, else None."""
        scheme, _, token = (authorization or "").partition(" ")
        return self.name_of(token.strip()) if scheme.lower() == "bearer" else None


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


def configured_tokens(named: Mapping[str, str], environ: Mapping[str, str] | None = None) -> Tokens:
    environ = os.environ if environ is None else environ
    tokens = dict(named)
    from_env = environ.get(TOKEN_ENV, "").strip()
    if from_env:
        if ENV_TOKEN_NAME in tokens and tokens[ENV_TOKEN_NAME] != from_env:
            raise AuthConfigError(
                f"{TOKEN_ENV} is set and service.tokens names another token {ENV_TOKEN_NAME!r}: rename one"
            )
        if len(from_env) < 16:
            raise AuthConfigError(
                f"{TOKEN_ENV} is shorter than 16 characters: use a random one (e.g. `openssl rand -hex 24`)"
            )
        tokens[ENV_TOKEN_NAME] = from_env
    return Tokens.of(tokens)


def is_loopback_host(host: str) -> bool:
    host = host.strip("[]").lower()
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_bind(host: str, tokens: Tokens, *, what: str) -> None:
    """A bind beyond loopback needs a token: anyone who reaches the port would
    otherwise reach every tool and the real world behind them."""
    if not is_loopback_host(host) and not tokens.enabled:
        raise AuthConfigError(
            f"{what} would listen on {host}, beyond loopback, with no token: set {TOKEN_ENV} "
            "(or service.tokens) so callers must authenticate, or bind 127.0.0.1"
        )


def namespaced(token_name: str | None, session_id: str) -> str:
    """The session id a caller's name means: in its token's namespace when tokens are on."""
    return session_id if token_name is None else f"{token_name}/{session_id}"


def basic_credentials(value: str | None) -> tuple[str, str] | None:
    """(user, password) of a `Basic` Proxy-Authorization / Authorization value."""
    if not value:
        return None
    scheme, _, encoded = value.partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    user, _, password = decoded.partition(":")
    return user, password


def short_id(session_id: str) -> str:
    """A session id as INFO logs show it: enough to tell sessions apart, not enough to join one."""
    return (
        session_id
        if len(session_id) <= 8
        else f"{session_id[:6]}…{hashlib.sha256(session_id.encode()).hexdigest()[:6]}"
    )
