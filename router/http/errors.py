"""Responses mitmproxy writes itself, in simroute's form.

mitmproxy answers a malformed request (400), an unreachable upstream, a TLS
failure or a broken upstream connection (502) with an HTML page of its own,
from its HTTP/1 layer's `make_error_response`. simroute replaces that one
function so those answers are JSON with a reason and carry
`X-Simroute-Provenance: none` like every other answer. The addon may ask for
the next error page of a given message to say something else (the real route's
deadline is a 504, though mitmproxy only sees its upstream connection closed).

Pinned to mitmproxy 12.2.3 (see pyproject.toml); `install()` fails loudly if the
function it replaces is gone.
"""

from __future__ import annotations

import json
import time
from collections import deque

from backends.http_messages import PROVENANCE_HEADER

_OVERRIDE_TTL_S = 1.0  # claimed right after the error hook; a stale one must not answer a later error
# message -> (status, reason, expiry) replacements, consumed in order
_overrides: dict[str, deque[tuple[int, str, float]]] = {}


def error_page(status: int, reason: str) -> bytes:
    from mitmproxy import http
    from mitmproxy.net.http import http1

    body = json.dumps({"error": reason, "status": status, "provenance": "none"}, ensure_ascii=False)
    response = http.Response.make(
        status, body, {"Content-Type": "application/json", "Connection": "close", PROVENANCE_HEADER: "none"}
    )
    return http1.assemble_response(response)


def replace_next(message: str, status: int, reason: str) -> None:
    """The next error page mitmproxy makes for `message` says `reason` with `status`."""
    now = time.monotonic()
    if len(_overrides) > 256:  # pages never asked for (an HTTP/2 client gets a stream reset instead)
        for stale in [m for m, queue in _overrides.items() if queue[-1][2] < now]:
            del _overrides[stale]
    _overrides.setdefault(message, deque()).append((status, reason, now + _OVERRIDE_TTL_S))


def _take(message: str) -> tuple[int, str] | None:
    queue = _overrides.get(message)
    now = time.monotonic()
    while queue:
        status, reason, expiry = queue.popleft()
        if expiry >= now:
            if not queue:
                del _overrides[message]
            return status, reason
    _overrides.pop(message, None)
    return None


def install() -> None:
    from mitmproxy.proxy.layers.http import _http1

    current = getattr(_http1, "make_error_response", None)
    if current is None:
        raise RuntimeError("mitmproxy's HTTP/1 layer has no make_error_response: simroute needs mitmproxy 12.2.3")
    if getattr(current, "simroute", False):
        return

    def make_error_response(status_code: int, message: str = "") -> bytes:
        override = _take(message)
        if override is not None:
            return error_page(*override)
        return error_page(status_code, f"simroute proxy: {message}" if message else f"simroute proxy: error {status_code}")

    make_error_response.simroute = True  # type: ignore[attr-defined]
    _http1.make_error_response = make_error_response
