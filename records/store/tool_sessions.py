"""Which recorded sessions used a tool, newest first: where sequence-aligned replay
(backends/alignment) looks for a real session that made the calls this one makes.

Both stores read the tool's newest real records (an indexed read with a cap: at
most `ROWS_READ` rows) and keep their sessions with this one rule: each session
once, in the order of its newest record, never the asking session, only those of
the namespaces given, at most `limit`."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from records.store.namespaces import in_namespaces

# A tool's newest real records read at most for one lookup: a session that calls the
# tool often fills several rows, so the rows read are a few times the sessions wanted.
ROWS_READ = 256


def newest_sessions(
    sessions: Iterable[str], *, exclude_session: str, limit: int, namespaces: Sequence[str] | None = None
) -> list[str]:
    """The distinct sessions of `sessions` (the sessions of records, newest record
    first) other than `exclude_session` and within `namespaces`, at most `limit`."""
    found: dict[str, None] = {}
    for session in sessions:
        if len(found) >= limit:
            break
        if session != exclude_session and in_namespaces(session, namespaces):
            found.setdefault(session, None)
    return list(found)
