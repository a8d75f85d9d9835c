"""Read-only helpers of the command line: `--since` durations and dates, and one
record of the SQLite store by (a prefix of) its id.

The file is opened read-only (`mode=ro`), so a listing never takes a write lock
from a running router.
"""

from __future__ import annotations

import json
import re
import sqlite3
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

_DURATION = re.compile(r"^(\d+(?:\.\d+)?)\s*(s|m|h|d)$")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


class QueryError(ValueError):
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


def _connect(path: Path) -> sqlite3.Connection:
    try:
        return sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
    except sqlite3.Error as exc:
        raise QueryError(f"cannot open record store {path}: {exc}") from exc


def record_by_id(path: Path, prefix: str) -> dict[str, Any]:
    """The record whose id is or starts with `prefix` (the listing shows 12 characters)."""
    if not re.fullmatch(r"[0-9a-f]{4,32}", prefix):
        raise QueryError(f"a record id is 4 to 32 hexadecimal characters, got {prefix!r}")
    db = _connect(path)
    try:
        rows = db.execute("SELECT body FROM records WHERE id >= ? AND id < ? LIMIT 2", (prefix, prefix + "g")).fetchall()
    except sqlite3.Error as exc:
        raise QueryError(f"cannot read record store {path}: {exc}") from exc
    finally:
        db.close()
    if not rows:
        raise QueryError(f"no record with id {prefix}")
    if len(rows) > 1:
        raise QueryError(f"more than one record id starts with {prefix}: give more characters")
    return json.loads(rows[0][0])
