"""What a request really addresses, before rules see it.

A rule written for `api.example.com` and `/admin/*` must also see
`API.example.com.`, `/%61dmin/x` and `/public/../admin/x`: the host is lower-cased,
its trailing dot dropped and IDNA-encoded; the path's percent-encoded unreserved
characters are decoded (RFC 3986 2.3) and its `.`/`..` segments resolved (5.2.4);
the query's unreserved characters likewise. The normalised request is also what
goes upstream, so the rule and the server see the same thing. What the parser
accepts but an upstream could read otherwise (a folded or NUL-bearing header, an
HTTP version other than 1.x or negotiated 2) is named here, to be refused rather
than forwarded. Pure functions.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_PERCENT = re.compile(r"%([0-9A-Fa-f]{2})")
_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


class NormalizationError(ValueError):
    """The request cannot be normalised safely (answered 400)."""


def normalize_host(host: str) -> str:
    """Lower case, no trailing dot, IDNA (punycode) for international names."""
    host = host.strip()
    if host.startswith("[") or ":" in host:  # an IPv6 literal
        return host.lower()
    host = host.rstrip(".").lower()
    if not host:
        raise NormalizationError("the request names no host")
    if host.isascii():
        return host
    try:
        import idna

        return idna.encode(host, uts46=True).decode("ascii")
    except idna.IDNAError as exc:
        raise NormalizationError(f"host {host!r} is not a valid international domain name: {exc}") from exc


def _decode_unreserved(text: str) -> str:
    def replace(match: re.Match[str]) -> str:
        value = int(match.group(1), 16)
        return chr(value) if value in _UNRESERVED else f"%{match.group(1).upper()}"

    return _PERCENT.sub(replace, text)


def normalize_path(path: str) -> str:
    """`path` (with its query, as mitmproxy's `request.path`) normalised. Raises
    NormalizationError when `..` would climb above the root: the server would
    resolve it against a prefix the rules never saw."""
    if path == "*" or not path.startswith("/"):
        return path  # OPTIONS * and absolute-form targets are left to the parser
    raw, sep, query = path.partition("?")
    decoded = _decode_unreserved(raw)
    output: list[str] = []
    segments = decoded.split("/")[1:]
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == ".":
            if last:
                output.append("")
            continue
        if segment == "..":
            if not output:
                raise NormalizationError(f"path {raw!r} climbs above the root with '..'")
            output.pop()
            if last:
                output.append("")
            continue
        output.append(segment)
    normalized = "/" + "/".join(output)
    return normalized + (sep + _decode_unreserved(query) if sep else "")


def host_header_contradicts(header: str | None, host: str, port: int, scheme: str) -> bool:
    """Whether a Host header names another server than the one connected to."""
    if header is None:
        return False
    header = header.strip()
    if header.startswith("["):
        name, _, rest = header[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ""
    else:
        name, _, port_text = header.rpartition(":") if header.count(":") == 1 else (header, "", "")
    if port_text and not port_text.isdigit():
        return True
    header_port = int(port_text) if port_text else _DEFAULT_PORTS.get(scheme, port)
    try:
        return normalize_host(name) != normalize_host(host) or header_port != port
    except NormalizationError:
        return True


def unsafe_header(fields: Sequence[tuple[bytes, bytes]]) -> str | None:
    """What is wrong with the first header whose value holds a line break or a NUL, if
    any. The parser keeps a header folded over several lines (RFC 9112 5.2's obsolete
    line folding) with its line break, and a NUL as it came, and would write them
    upstream so; RFC 9110 5.5 has a proxy refuse such a value or replace those
    characters. A server that reads them otherwise than simroute did (one that refuses
    them, or takes a folded line for a header of its own) must never get them, so the
    request is refused rather than forwarded."""
    for name, value in fields:
        if b"\r" in value or b"\n" in value:
            return (
                f"the header {name.decode('latin-1')!r} is folded over several lines (obsolete line folding): "
                "send it on one line"
            )
        if b"\0" in value:
            return f"the header {name.decode('latin-1')!r} holds a NUL character"
    return None


def unsupported_version(version: str, alpn: bytes | None) -> str | None:
    """Why a request's HTTP version cannot go upstream, if it cannot. The parser takes
    any `HTTP/d.d` on a request line (`HTTP/0.9`, `HTTP/9.9`, `HTTP/2.0`) and would
    write it upstream as it came; simroute forwards HTTP/1.0, HTTP/1.1, and HTTP/2
    only where it was negotiated (TLS with ALPN `h2`)."""
    if version in ("HTTP/1.0", "HTTP/1.1") or (version == "HTTP/2.0" and alpn == b"h2"):
        return None
    return (
        f"simroute proxy: HTTP version {version!r} is not supported here "
        "(HTTP/1.0, HTTP/1.1, or HTTP/2 negotiated over TLS)"
    )
