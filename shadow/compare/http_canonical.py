"""The canonical form of an HTTP request, for matching, replay and comparison.

method + normalised URL (scheme and host lower-case, default port dropped,
query parameters sorted, configured noisy parameters left out) + canonical
body (JSON with key order normalised and configured noisy fields left out;
other bodies as they are).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from calls import drop_paths

_DEFAULT_PORTS = {"http": 80, "https": 443}


def authority(scheme: str, host: str, port: int | None) -> str:
    """`host[:port]`, the port left out when it is the scheme's default."""
    host = host.lower()
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"  # an IPv6 address
    if port is None or _DEFAULT_PORTS.get(scheme.lower()) == port:
        return host
    return f"{host}:{port}"


def query_pairs(query: str) -> list[tuple[str, str]]:
    return parse_qsl(query, keep_blank_values=True)


def normalize_url(url: str, *, ignore_query: Iterable[str] = ()) -> str:
    """The URL with scheme and host lower-cased, the default port dropped, the
    fragment dropped and the query sorted; `ignore_query` parameters left out."""
    return _normalized_url(url, tuple(ignore_query))


@functools.lru_cache(maxsize=4096)  # every request is keyed by it; agents repeat their URLs
def _normalized_url(url: str, ignore_query: tuple[str, ...]) -> str:
    parts = urlsplit(url)
    ignored = set(ignore_query)
    scheme = parts.scheme.lower()
    host = authority(scheme, parts.hostname or "", parts.port)
    pairs = sorted((k, v) for k, v in query_pairs(parts.query) if k not in ignored)
    return urlunsplit((scheme, host, parts.path or "/", urlencode(pairs), ""))


def query_dict(pairs: Iterable[tuple[str, str]]) -> dict[str, Any]:
    """Query parameters as a mapping; a repeated parameter maps to the list of its values."""
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            existing = result[key]
            result[key] = [*existing, value] if isinstance(existing, list) else [existing, value]
        else:
            result[key] = value
    return result


def canonical_arguments(
    arguments: dict[str, Any], *, ignore_query: Iterable[str] = (), ignore_body_fields: Iterable[str] = ()
) -> dict[str, Any]:
    """An HTTP call's arguments in canonical form: what two requests must share to be
    the same request. Key order is normalised later, by the key's JSON encoding."""
    ignore_query = tuple(ignore_query)
    canonical = dict(arguments)
    if ignore_query:
        canonical["url"] = normalize_url(str(arguments.get("url", "")), ignore_query=ignore_query)
        query = arguments.get("query")
        if isinstance(query, dict):
            canonical["query"] = {k: v for k, v in query.items() if k not in ignore_query}
    body = arguments.get("body")
    if isinstance(body, (dict, list)):
        canonical["body"] = drop_body_fields(body, ignore_body_fields)
    return canonical


def drop_body_fields(body: Any, fields: Iterable[str]) -> Any:
    """`body` without the dotted field paths in `fields`; `items.*.id` reaches into
    every element of a list (and a list body is walked element by element)."""
    fields = list(fields)
    if not fields:
        return body
    if isinstance(body, list):
        return [drop_body_fields(item, fields) for item in body]
    return drop_paths(body, fields) if isinstance(body, dict) else body


def canonical_form(
    *, ignore_query: Iterable[str] = (), ignore_body_fields: Iterable[str] = ()
) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """The canonical form as a function of a call's arguments (for the replay backend)."""
    ignore_query, ignore_body_fields = tuple(ignore_query), tuple(ignore_body_fields)

    def form(arguments: dict[str, Any]) -> dict[str, Any]:
        return canonical_arguments(arguments, ignore_query=ignore_query, ignore_body_fields=ignore_body_fields)

    return form


def is_http_response(structured: Any) -> bool:
    return isinstance(structured, Mapping) and "status" in structured and "body_encoding" in structured


def comparable_response(structured: Mapping[str, Any]) -> dict[str, Any]:
    """What a shadow comparison looks at in an HTTP response: the status, the content
    type and the body (JSON as its value). Headers that differ on every answer (date,
    server, ids) and body formatting are left out."""
    content_type = next((str(v) for n, v in structured.get("headers") or [] if str(n).lower() == "content-type"), "")
    body: Any = structured.get("body")
    if isinstance(body, str) and body.strip()[:1] in ("{", "["):
        try:
            body = json.loads(body)
        except ValueError:
            pass
    return {
        "status": structured.get("status"),
        "content_type": content_type.split(";")[0].strip().lower(),
        "body": body,
    }
