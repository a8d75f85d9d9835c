"""mitmproxy flows as simroute reads and answers them: a request's URL and server,
header fields, whether a response streams, and the answers simroute makes itself
(with the provenance, route, record and safety headers every answer carries, and
the source header of an answer that has one)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from backends.http.messages import (
    PERTURBATION_HEADER,
    PROVENANCE_HEADER,
    RECORD_HEADER,
    ROUTE_HEADER,
    SAFETY_HEADER,
    SOURCE_HEADER,
)
from calls import Route
from shadow.compare.http_canonical import authority

if TYPE_CHECKING:
    from mitmproxy import http

    from router.engine.engine import Outcome


def url_of(request: http.Request) -> str:
    """The request's URL (mitmproxy's `url` leaves an IPv6 host unbracketed)."""
    return f"{request.scheme}://{authority(request.scheme, request.host, request.port)}{request.path}"


def server_of(flow: http.HTTPFlow) -> str:
    request = flow.request
    return authority(request.scheme, request.host or "unknown", request.port)


def fields(headers: Any, *, drop_encoding: bool = False) -> list[tuple[str, str]]:
    pairs = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in headers.fields]
    return [(k, v) for k, v in pairs if k.lower() != "content-encoding"] if drop_encoding else pairs


def streams(response: http.Response, limit: int) -> bool:
    """Pass the body through as it arrives: event streams, bodies of unknown length
    (chunked, or until the connection closes) and bodies over the record limit."""
    headers = response.headers
    if "event-stream" in headers.get("content-type", ""):
        return True
    length = headers.get("content-length")
    if length is None or not length.strip().isdigit():
        return response.status_code not in (204, 304)
    return int(length) > limit


def fallback_status(outcome: Outcome) -> int:
    """The status of an answer with no HTTP form of its own."""
    return 403 if outcome.record.decision.route is Route.DENY else 502


def make_response(
    status: int, reason: str, headers: list[tuple[str, str]], body: bytes, route: Route, outcome: Outcome | None
) -> http.Response:
    from mitmproxy import http  # mitmproxy loads with the proxy, not with every import of the channel

    response = http.Response.make(status, body, [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers])
    if reason:
        response.reason = reason
    provenance = str(outcome.observation.provenance) if outcome is not None else "none"
    response.headers[PROVENANCE_HEADER] = provenance
    response.headers[ROUTE_HEADER] = str(route)
    if outcome is not None:
        response.headers[RECORD_HEADER] = outcome.record.id
        if outcome.record.decision.safety:
            response.headers[SAFETY_HEADER] = outcome.record.decision.safety
        if outcome.record.perturbation is not None:
            response.headers[PERTURBATION_HEADER] = json.dumps(outcome.record.perturbation, separators=(",", ":"))
        if (source := outcome.observation.source_json()) is not None:  # ASCII-escaped: a header is latin-1
            response.headers[SOURCE_HEADER] = json.dumps(source, separators=(",", ":"))
    return response
