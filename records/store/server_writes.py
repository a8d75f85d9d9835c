"""Which records are calls that may have written to their server, and over what time.

The noise learner asks the store whether any router wrote to a server between two
real answers it would compare (`RecordStore.writes_between`); the stores index the
records this module calls writes when they are written, by the end of their span.

A record may have written when its call may have reached the real side (not
simulated, replayed or denied) and is not known to read only. Its span runs from
the call's start (`ts`) to its end (`ended`): a call still `started` (in flight, or
its router died before marking it) may write at any later moment. Records from
before `reads_only` and `ended` were kept fall back to what they carry: the safety
class for the first (as `Pending.reads_only` would decide without the front door's
word), the start for the second.
"""

from __future__ import annotations

import math
from typing import Any

_NOT_REAL = ("sim", "replay", "fork")  # an answer served without the real side


def write_span(row: dict[str, Any]) -> tuple[float, float] | None:
    """(start, end) of the record `row` (a `Record.to_json()` object) if its call may
    have written to its server, else None. `end` is infinite while it is `started`."""
    if row["route"] in ("sim", "deny", "fork") or row["provenance"] in _NOT_REAL:
        return None
    reads_only = row.get("reads_only")
    if reads_only is None:
        reads_only = row.get("safety_class") == "safe"
    if reads_only:
        return None
    start = float(row["ts"])
    if row.get("status") == "started":
        return start, math.inf
    ended = row.get("ended")
    return start, float(ended) if ended is not None else start
