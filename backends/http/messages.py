"""HTTP messages as simroute sees them: requests become `Call`s, responses become
`Observation`s, and both render as raw HTTP text (request or status line,
headers, blank line, body) for the records and the world model.

An HTTP observation's `structured` part is the response:
`{"status", "reason", "headers": [[name, value], ...], "body", "body_encoding",
"body_size", "truncated", "body_sha256"?}`; its text content is the raw response.
Bodies are recorded as text when they decode as UTF-8, else as base64; a body
larger than the limit is recorded truncated with a marker (text) or by its
SHA-256 digest and size (binary), never mangled.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any
from urllib.parse import urlsplit

from calls import Call, Observation, Provenance
from shadow.compare.http_canonical import authority, normalize_url, query_dict, query_pairs

PROVENANCE_HEADER = "X-Simroute-Provenance"
ROUTE_HEADER = "X-Simroute-Route"
RECORD_HEADER = "X-Simroute-Record"
PERTURBATION_HEADER = "X-Simroute-Perturbation"  # a perturbed answer's {kind, rule, seed, n}, as compact JSON
SOURCE_HEADER = (
    "X-Simroute-Source"  # where within its provenance the answer came from ({sub, model, …}), as compact JSON
)
SAFETY_HEADER = "X-Simroute-Safety"  # the safety gate's class of the request (safe, side_effect, destructive, unknown)
# Not part of a recorded or replayed response: they describe one connection or one encoding.
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "content-length",
    }
)
_TEXT_TYPES = ("text/", "json", "xml", "javascript", "x-www-form-urlencoded", "event-stream", "yaml", "graphql")


@dataclass(frozen=True, slots=True)
class HttpSettings:
    """What the channel's config says about turning messages into calls."""

    record_headers: tuple[str, ...] = ("content-type", "accept")
    max_body_bytes: int = 1_048_576
    # Headers whose values enter the call as a keyed digest (never in clear): one
    # user's recorded answer is never replayed to another. No key: left out.
    credential_headers: tuple[str, ...] = ()
    credential_key: bytes | None = None


@dataclass(slots=True)
class BodyCapture:
    """Keeps the first `limit` bytes of a body that streams through, counting and
    hashing all of it. Used as mitmproxy's `response.stream` callable: every chunk is
    passed on unchanged."""

    limit: int
    size: int = 0
    chunks: list[bytes] = field(default_factory=list)
    _kept: int = 0
    _digest: Any = field(default_factory=hashlib.sha256)

    def __call__(self, chunk: bytes) -> bytes:
        if chunk:
            self.size += len(chunk)
            self._digest.update(chunk)
            if self._kept < self.limit:
                piece = chunk[: self.limit - self._kept]
                self.chunks.append(piece)
                self._kept += len(piece)
        return chunk

    @property
    def data(self) -> bytes:
        return b"".join(self.chunks)

    @property
    def sha256(self) -> str:
        return self._digest.hexdigest()


def is_textual(content_type: str) -> bool:
    content_type = content_type.lower()
    return any(marker in content_type for marker in _TEXT_TYPES)


def encode_body(data: bytes, *, limit: int, size: int | None = None, sha256: str | None = None) -> dict[str, Any]:
    """The recorded form of a body. `data` may be the first bytes of a longer body of
    `size` bytes (with the whole body's `sha256`)."""
    size = len(data) if size is None else size
    truncated = size > limit or len(data) > limit
    kept = data[:limit]
    record: dict[str, Any] = {"body_size": size, "truncated": truncated}
    if not data and not truncated:
        return {**record, "body": "", "body_encoding": "text"}
    text = _utf8(kept, partial=truncated)
    if text is not None:
        if truncated:
            text += f"\n[simroute: body truncated, {len(kept)} of {size} bytes recorded]"
        record.update(body=text, body_encoding="text")
    elif not truncated:
        record.update(body=base64.b64encode(kept).decode("ascii"), body_encoding="base64")
    else:
        record.update(body=None, body_encoding="none")  # a large binary body: recorded by digest and size
    if truncated:
        record["body_sha256"] = sha256 or hashlib.sha256(data).hexdigest()
    return record


def _utf8(data: bytes, *, partial: bool) -> str | None:
    """The text of `data`, or None for binary (not UTF-8, or holding NUL bytes)."""
    if b"\x00" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A cut may fall inside a multi-byte character: only the last 3 bytes may be incomplete.
        if partial and exc.start >= len(data) - 3 and exc.reason == "unexpected end of data":
            return data[: exc.start].decode("utf-8")
        return None


def decode_body(structured: Mapping[str, Any]) -> bytes:
    body = structured.get("body")
    if body is None:
        return b""
    if structured.get("body_encoding") == "base64":
        return base64.b64decode(body)
    return str(body).encode("utf-8")


# --- requests -> calls ---------------------------------------------------------------


def request_body_value(data: bytes, content_type: str, *, limit: int) -> Any:
    """A request body as a call argument: JSON as its value (so rules and canonical
    keys see fields), text as text, binary as base64; None when empty."""
    if not data:
        return None
    if len(data) <= limit and "json" in content_type.lower():
        try:
            return json.loads(data)
        except ValueError:
            pass
    encoded = encode_body(data, limit=limit)
    if encoded["truncated"]:  # the digest keeps two long bodies with the same start apart
        text = encoded["body"] if encoded["body_encoding"] == "text" else None
        return {
            "sha256": encoded["body_sha256"],
            "size": encoded["body_size"],
            **({"text": text} if text is not None else {}),
        }
    if encoded["body_encoding"] == "text":
        return encoded["body"]
    return {"base64": encoded["body"]}


def make_call(
    *, method: str, url: str, headers: Iterable[tuple[str, str]], body: bytes, session_id: str, settings: HttpSettings
) -> Call:
    """The call of one HTTP request: channel `http`, server `host[:port]`, tool the method."""
    parts = urlsplit(url)
    wanted = settings.record_headers
    selected: dict[str, str] = {}
    content_type = ""
    credentials: list[tuple[str, str]] = []
    for name, value in headers:
        lower = name.lower()
        if lower == "content-type":
            content_type = value
        if lower in wanted:
            selected[lower] = f"{selected[lower]}, {value}" if lower in selected else value
        if lower in settings.credential_headers:
            credentials.append((lower, value))
    method = method.upper()
    arguments = {
        "method": method,
        "url": normalize_url(url),
        "path": parts.path or "/",
        "query": query_dict(query_pairs(parts.query)),
        "headers": selected,
        "body": request_body_value(body, content_type, limit=settings.max_body_bytes),
    }
    if credentials and settings.credential_key is not None:
        arguments["credentials"] = credential_digest(credentials, settings.credential_key)
    return Call("http", authority(parts.scheme, parts.hostname or "", parts.port), method, arguments, session_id)


def credential_digest(credentials: Iterable[tuple[str, str]], key: bytes) -> str:
    """A short keyed digest of the credentials a request carried (order-insensitive)."""
    body = json.dumps(sorted(credentials), separators=(",", ":")).encode()
    return hmac.new(key, body, hashlib.sha256).hexdigest()[:24]


def render_request(call: Call, *, body_chars: int | None = None) -> str:
    """The raw HTTP request of a call: request line, headers, blank line, body (cut
    to `body_chars` with a marker, when given)."""
    arguments = call.arguments
    parts = urlsplit(str(arguments.get("url", "")))
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    lines = [f"{arguments.get('method', call.tool)} {target} HTTP/1.1", f"Host: {call.server}"]
    lines += [f"{_title(name)}: {value}" for name, value in (arguments.get("headers") or {}).items()]
    body = arguments.get("body")
    if isinstance(body, (dict, list)):
        body = json.dumps(body, ensure_ascii=False)
    head = "\n".join(lines)
    if body is None:
        return head
    body = str(body)
    if body_chars is not None and len(body) > body_chars:
        body = body[:body_chars] + f"\n[{len(body) - body_chars} characters cut]"
    return f"{head}\n\n{body}"


def _title(name: str) -> str:
    return "-".join(part.capitalize() for part in name.split("-"))


# --- responses <-> observations ---------------------------------------------------------


def response_record(
    status: int, reason: str, headers: Iterable[tuple[str, str]], body: dict[str, Any], *, decoded: bool
) -> dict[str, Any]:
    """The structured part of an HTTP observation. With `decoded`, the body was
    content-decoded (gzip…) and the content-encoding header is dropped with it."""
    kept = [
        [name, value]
        for name, value in headers
        if name.lower() not in HOP_BY_HOP
        and not name.lower().startswith("x-simroute-")
        and not (decoded and name.lower() == "content-encoding")
    ]
    return {"status": status, "reason": reason or _reason(status), "headers": kept, **body}


def observation_of(structured: dict[str, Any], provenance: Provenance, *, latency_s: float = 0.0) -> Observation:
    return Observation(
        content=[{"type": "text", "text": render_response(structured)}],
        provenance=provenance,
        is_error=int(structured.get("status", 0)) >= 400,
        structured=structured,
        latency_s=latency_s,
    )


def render_response(structured: Mapping[str, Any]) -> str:
    """The raw HTTP response: status line, headers, blank line, body (a binary body
    is described, not dumped)."""
    status = int(structured.get("status", 0))
    lines = [f"HTTP/1.1 {status} {structured.get('reason') or _reason(status)}".rstrip()]
    lines += [f"{name}: {value}" for name, value in structured.get("headers") or []]
    encoding = structured.get("body_encoding")
    if encoding == "base64":
        body = f"[binary body: {structured.get('body_size')} bytes, base64 in the record]"
    elif encoding == "none":
        body = (
            f"[binary body: {structured.get('body_size')} bytes, sha256 {structured.get('body_sha256')}, not recorded]"
        )
    else:
        body = str(structured.get("body") or "")
    return "\n".join(lines) + "\n\n" + body


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def parse_response(text: str) -> dict[str, Any]:
    """A raw HTTP response (as a world model writes one) in structured form.
    Raises ValueError when there is no status line."""
    text = text.replace("\r\n", "\n").lstrip()
    head, sep, body = text.partition("\n\n")
    lines = [line for line in head.split("\n") if line.strip()]
    status_line = lines[0].strip() if lines else ""
    protocol, _, rest = status_line.partition(" ")
    code, _, reason = rest.strip().partition(" ")
    if not protocol.upper().startswith("HTTP/") or not code.isdigit() or not 100 <= int(code) <= 599:
        raise ValueError(f"not an HTTP status line: {status_line[:80]!r}")
    headers = []
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon or not name.strip() or " " in name.strip():
            raise ValueError(f"not an HTTP header line: {line[:80]!r}")
        headers.append((name.strip(), value.strip()))
    data = body.encode("utf-8") if sep else b""
    # decoded: the model writes bodies as text, never gzip, whatever its headers say.
    return response_record(int(code), reason.strip(), headers, encode_body(data, limit=len(data) or 1), decoded=True)


def error_structured(status: int, message: str, **details: Any) -> dict[str, Any]:
    """A JSON error response made by simroute itself."""
    body = json.dumps({"error": message, **details}, ensure_ascii=False)
    return response_record(
        status,
        "",
        [("Content-Type", "application/json")],
        encode_body(body.encode(), limit=len(body.encode())),
        decoded=False,
    )


def response_parts(observation: Observation, *, fallback_status: int) -> tuple[int, str, list[tuple[str, str]], bytes]:
    """(status, reason, headers, body) to send for an observation; an observation with
    no HTTP structure (a denial, a model failure) becomes a JSON error with `fallback_status`."""
    structured = observation.structured
    if not structured or "status" not in structured:
        structured = error_structured(fallback_status, observation.text)
    headers: Sequence[Sequence[str]] = structured.get("headers") or []
    return (
        int(structured["status"]),
        str(structured.get("reason") or ""),
        [(str(n), str(v)) for n, v in headers],
        decode_body(structured),
    )
