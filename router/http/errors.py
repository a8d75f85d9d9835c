"""Responses mitmproxy writes itself, in simroute's form.

mitmproxy answers a malformed request (400), an unreachable upstream, a TLS
failure or a broken upstream connection (502) with an HTML page of its own,
from its HTTP/1 layer's `make_error_response`. simroute replaces that one
function (`mitmproxy_patches.install_error_pages`) with `error_response`, so those
answers are JSON with a reason and carry `X-Simroute-Provenance: none` like every
other answer. The addon may ask for
the next error page of a given message to say something else (the real route's
deadline is a 504, though mitmproxy only sees its upstream connection closed).
"""

from __future__ import annotations

import json
import logging
import time
from collections import deque
from collections.abc import Callable

from backends.http.messages import PROVENANCE_HEADER, RECORD_HEADER

log = logging.getLogger("simroute.http")

_OVERRIDE_TTL_S = 1.0  # claimed right after the error hook; a stale one must not answer a later error
# message -> (status, reason, expiry, record id) replacements, consumed in order
_overrides: dict[str, deque[tuple[int, str, float, str | None]]] = {}
# Records a request mitmproxy could not parse (answered 400 before any hook saw it)
# and returns the record's id; set by the proxy running in this process.
on_unparsed_request: Callable[[str], str] | None = None


def error_page(status: int, reason: str, *, record_id: str | None = None) -> bytes:
    from mitmproxy import http
    from mitmproxy.net.http import http1

    body = json.dumps({"error": reason, "status": status, "provenance": "none"}, ensure_ascii=False)
    headers = {"Content-Type": "application/json", "Connection": "close", PROVENANCE_HEADER: "none"}
    if record_id:
        headers[RECORD_HEADER] = record_id
    response = http.Response.make(status, body, headers)
    return http1.assemble_response(response)


def _record_unparsed(message: str) -> str | None:
    if on_unparsed_request is None:
        return None
    try:
        return on_unparsed_request(message)
    except (
        Exception
    ):  # mitmproxy's synchronous error path, a last resort: the 400 still goes out; the failure to record is logged
        log.exception("recording a malformed request failed")
        return None


def replace_next(message: str, status: int, reason: str, *, record_id: str | None = None) -> None:
    """The next error page mitmproxy makes for `message` says `reason` with `status`."""
    now = time.monotonic()
    if len(_overrides) > 256:  # pages never asked for (an HTTP/2 client gets a stream reset instead)
        for stale in [m for m, queue in _overrides.items() if queue[-1][2] < now]:
            del _overrides[stale]
    _overrides.setdefault(message, deque()).append((status, reason, now + _OVERRIDE_TTL_S, record_id))


def _take(message: str) -> tuple[int, str, str | None] | None:
    queue = _overrides.get(message)
    now = time.monotonic()
    while queue:
        status, reason, expiry, record_id = queue.popleft()
        if expiry >= now:
            if not queue:
                del _overrides[message]
            return status, reason, record_id
    _overrides.pop(message, None)
    return None


def error_response(status_code: int, message: str = "") -> bytes:
    """What mitmproxy's HTTP/1 layer writes for an error (see `mitmproxy_patches.install_error_pages`)."""
    override = _take(message)
    if override is not None:
        status, reason, record_id = override
        return error_page(status, reason, record_id=record_id)
    reason = f"simroute proxy: {message}" if message else f"simroute proxy: error {status_code}"
    # A 400 without an override is a request no hook saw: recorded here.
    return error_page(status_code, reason, record_id=_record_unparsed(message) if status_code == 400 else None)
