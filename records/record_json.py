"""A record row as JSON text, fast: every record is serialised once on its way to
the store (SQLite body, Redis value, spool line), so this is on every call's path.

orjson writes the same JSON as `json.dumps(ensure_ascii=False, default=str)` about
five times faster; what it refuses (an integer beyond 64 bits, a non-string key)
falls back to the standard library, so any row that serialised before still does.
"""

from __future__ import annotations

import json
from typing import Any

import orjson


def dumps(row: Any) -> str:
    try:
        return orjson.dumps(row, default=str).decode()
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return json.dumps(row, ensure_ascii=False, default=str)
