"""What a value is, by its shape: datetimes, uuids, hashes, ids, durations, sizes.

The divergence metric compares values by type. Two values of one of these
shapes that differ are usually noise (every call gets a new request id, a new
timestamp), so the built-in noise detectors mask them from the first call. What
is not noise is a change of shape: a uuid where a number was, a datetime in
another format or at another UTC offset.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from functools import lru_cache

_ISO = re.compile(
    r"(?P<date>\d{4}-\d{2}-\d{2})"
    r"(?:(?P<sep>[T ])(?P<hm>\d{2}:\d{2})(?P<sec>:\d{2})?(?P<frac>[.,]\d+)?)?"
    r"(?P<zone>Z|[+-]\d{2}(?::?\d{2})?)?"
)
_RFC2822 = re.compile(
    r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{1,2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} (?:GMT|UTC|[+-]\d{4})"
)
_CLOCK = re.compile(r"\d{1,2}:\d{2}(?::\d{2})?(?:[.,]\d+)?")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_HEX = re.compile(r"[0-9a-f]{7,128}|[0-9A-F]{7,128}")
_TOKEN_ID = re.compile(r"[A-Za-z0-9_\-]{16,}")
_DURATION = re.compile(r"\d+(?:\.\d+)?\s?(?:ns|µs|us|ms|s|sec|secs|seconds?|m|min|mins|minutes?|h|hours?)")
_SIZE = re.compile(r"\d+(?:\.\d+)?\s?(?:[KMGTP]i?B|[KMGTP]|B|bytes?|kB)", re.IGNORECASE)

# Keys whose numeric values change on every call.
_TIME_KEY = re.compile(
    r"(?:^|_)(?:ts|time|timestamp|date|datetime|created|updated|modified|expires?|issued|now)(?:_at|_on)?$|_at$"
)
_REQUEST_ID_KEY = re.compile(
    r"(?:^|_)(?:request|req|trace|span|correlation|session|message|run|operation)_?id$|^(?:etag|nonce|x_request_id|x_trace_id|x_amzn_requestid|cf_ray)$"
)
_DURATION_KEY = re.compile(
    r"(?:^|_)(?:duration|elapsed|latency|took|uptime|runtime)(?:_m?s|_seconds|_ns)?$|_ms$|_seconds$|_ns$"
)
_SIZE_KEY = re.compile(r"(?:^|_)(?:size|bytes|length|body_size|content_length|filesize)$")


@dataclass(frozen=True, slots=True)
class Moment:
    """A parsed datetime: the instant (noise), its UTC offset and its written format (not noise)."""

    instant: float  # POSIX seconds; a datetime without an offset is read as UTC
    offset_minutes: int | None  # None: no offset written
    format: str  # e.g. "iso:date+T+hm+sec+frac3+zone(+hh:mm)", "rfc2822"


@lru_cache(maxsize=4096)
def parse_moment(text: str) -> Moment | None:
    """The datetime `text` is, when it is one (ISO 8601 or RFC 2822 / HTTP-date), else None."""
    if not 10 <= len(text) <= 40:
        return None
    match = _ISO.fullmatch(text)
    if match:
        try:
            value = datetime.fromisoformat(text.replace(",", "."))
        except ValueError:
            return None
        return Moment(_instant(value), _offset_minutes(value), _iso_format(match))
    if _RFC2822.fullmatch(text):
        try:
            value = parsedate_to_datetime(text)
        except (TypeError, ValueError):
            return None
        return Moment(_instant(value), _offset_minutes(value), "rfc2822")
    return None


def _instant(value: datetime) -> float:
    return (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()


def _offset_minutes(value: datetime) -> int | None:
    offset = value.utcoffset()
    return None if offset is None else int(offset.total_seconds() // 60)


def _iso_format(match: re.Match[str]) -> str:
    parts = ["iso:date"]
    if match["sep"]:
        parts.append("T" if match["sep"] == "T" else "space")
        parts.append("hm")
    if match["sec"]:
        parts.append("sec")
    if match["frac"]:
        parts.append(f"frac{len(match['frac']) - 1}")
    zone = match["zone"]
    if zone:
        parts.append(
            "zone(Z)" if zone == "Z" else f"zone({'+hh:mm' if ':' in zone else '+hhmm' if len(zone) == 5 else '+hh'})"
        )
    return "+".join(parts)


@lru_cache(maxsize=4096)
def token_shape(token: str) -> str | None:
    """The shape of a word whose value is expected to change between calls, or None.
    Two differing tokens of the same shape are masked by the built-in detectors."""
    if parse_moment(token) is not None:
        return "timestamp"
    if _CLOCK.fullmatch(token) or re.fullmatch(r"\d{4}-\d{2}-\d{2}", token):
        return "timestamp"
    if _UUID.fullmatch(token):
        return "uuid"
    if _DURATION.fullmatch(token):
        return "duration"
    if _SIZE.fullmatch(token):
        return "size"
    if _HEX.fullmatch(token) and any(c.isdigit() for c in token) and any(c.isalpha() for c in token):
        return f"hash{len(token)}"
    if _TOKEN_ID.fullmatch(token) and any(c.isdigit() for c in token) and any(c.isalpha() for c in token):
        return f"id{len(token)}"
    return None


@lru_cache(maxsize=1024)
def key_noise(key: str) -> str | None:
    """The built-in detector a field name calls for (its value changes on every call), or None."""
    key = key.lower().replace("-", "_")
    if _REQUEST_ID_KEY.search(key):
        return "request-id"
    if _DURATION_KEY.search(key):
        return "duration"
    if _SIZE_KEY.search(key):
        return "size"
    if _TIME_KEY.search(key):
        return "timestamp"
    return None
