"""A ceiling on request bodies, none on responses.

mitmproxy's `body_size_limit` bounds requests and responses alike, and buffers a
request body whole before the `request` hook. simroute wants the request bound
(413 before routing, with nothing buffered beyond the limit, chunked or not) but
responses passing through as they always did (large ones stream). `install()`
keeps mitmproxy's check for requests and skips it for responses; the proxy sets
`body_size_limit` to `http.max_request_bytes`.

Pinned to mitmproxy 12.2.3 (see pyproject.toml); `install()` fails loudly if the
method it wraps is gone.
"""

from __future__ import annotations

REQUEST_TOO_LARGE = "Request body exceeds mitmproxy's body_size_limit."


def install() -> None:
    from mitmproxy.proxy.layers.http import HttpStream

    original = getattr(HttpStream, "check_body_size", None)
    if original is None:
        raise RuntimeError("mitmproxy's HttpStream has no check_body_size: simroute needs mitmproxy 12.2.3")
    if getattr(original, "simroute", False):
        return

    def check_body_size(self, request: bool):
        if not request:
            return False  # responses: as with no limit (simroute streams large ones itself)
        return (yield from original(self, request))

    check_body_size.simroute = True  # type: ignore[attr-defined]
    HttpStream.check_body_size = check_body_size
