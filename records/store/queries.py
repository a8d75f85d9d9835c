"""Read-only helpers of the command line: `--since` durations and dates, and one
record by (a prefix of) its id, from either store (`RecordStore.records_by_prefix`)."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime
from typing import Any

from records.errors import RecordsError

_DURATION = re.compile(r"^(\d+(?:\.\d+)?)\s*(s|m|h|d)$")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


class QueryError(RecordsError, ValueError):
    """A filter or id the user gave is not usable. The message is for the user."""


def parse_since(text: str, *, now: float | None = None) -> float:
    """`30s`, `10m`, `2h`, `1d` ago, or an ISO 8601 date or datetime (UTC when no offset)."""
    now = time.time() if now is None else now
    match = _DURATION.match(text.strip())
    if match:
        return now - float(match[1]) * _SECONDS[match[2]]
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError as exc:
        raise QueryError(f"--since: expected a duration such as 10m, 2h, 1d or an ISO date, got {text!r}") from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def check_id_prefix(prefix: str) -> str:
    """A record id or its first characters (the listing shows 12), lower-cased."""
    prefix = prefix.strip().lower()
    if not re.fullmatch(r"[0-9a-f]{4,32}", prefix):
        raise QueryError(f"a record id is 4 to 32 hexadecimal characters, got {prefix!r}")
    return prefix


async def record_by_id(store: Any, prefix: str) -> dict[str, Any]:
    """The record of `store` (SQLite or Redis) whose id is or starts with `prefix`."""
    prefix = check_id_prefix(prefix)
    rows = await store.records_by_prefix(prefix, limit=2)
    if not rows:
        raise QueryError(f"no record with id {prefix}")
    if len(rows) > 1:
        raise QueryError(f"more than one record id starts with {prefix}: give more characters")
    return rows[0]


def id_time_window(prefix: str, *, margin_s: float = 60.0) -> tuple[float, float]:
    """The timestamps a record whose id starts with `prefix` can have: ids begin with
    the creation time in nanoseconds (16 hex digits), written within moments of `ts`."""
    head = prefix[:16]
    low, high = int(head.ljust(16, "0"), 16) / 1e9, int(head.ljust(16, "f"), 16) / 1e9
    return low - margin_s, high + margin_s
