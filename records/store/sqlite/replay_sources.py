"""Which sessions hold each replay key, newest first (SQLite store): what replay's
source lookup and the world model's same-call examples read.

One row per (replay key, session) carrying the time of that session's latest
servable record of the key (records/servable.py: only an answer that may stand for
the real side's makes a session a source); the lookups read a key's newest `SESSIONS_PER_KEY` sessions.
A key is trimmed back to those once it holds twice as many: one trim per several
new sessions, not one per record.
An index on the records by key (what this replaces) put every record on its own
key's page, so each commit dirtied about one page per record and more as the
index grew (12 of 43 WAL pages per 32-record commit with 10,000 records held, 40
of 72 with 70,000). This table stays a few rows per key: a commit touches a few
pages whatever the store holds. The writer keeps it in the records' transaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from records.servable import SQL_SERVABLE

SESSIONS_PER_KEY = 8

TABLE = """
CREATE TABLE IF NOT EXISTS replay_sources (
    replay_key TEXT NOT NULL,
    session TEXT NOT NULL,
    ts REAL NOT NULL,
    PRIMARY KEY (replay_key, session)
) WITHOUT ROWID
"""

_NOTE = "INSERT INTO replay_sources VALUES (?, ?, ?) ON CONFLICT DO UPDATE SET ts = max(ts, excluded.ts)"
# The key's sessions older than its SESSIONS_PER_KEY-th newest go (none while it has fewer).
_CROWDED = 2 * SESSIONS_PER_KEY
_CHUNK = 500  # keys per statement (SQLite's limit on parameters is far above)
_TRIM = (
    "DELETE FROM replay_sources WHERE replay_key = ?1 AND ts <"
    f" (SELECT ts FROM replay_sources WHERE replay_key = ?1 ORDER BY ts DESC LIMIT 1 OFFSET {SESSIONS_PER_KEY - 1})"
)
_REFILL = (
    "INSERT INTO replay_sources SELECT replay_key, session, MAX(ts) FROM records WHERE replay_key = ? AND "
    f"{SQL_SERVABLE} GROUP BY session"
)


def note(db: sqlite3.Connection, records: Iterable[tuple[str, str, float]]) -> None:
    """In the writer's transaction: the (replay key, session, ts) of the servable records just written."""
    latest: dict[tuple[str, str], float] = {}
    for key, session, ts in records:
        if ts > latest.get((key, session), float("-inf")):
            latest[(key, session)] = ts
    db.executemany(_NOTE, [(key, session, ts) for (key, session), ts in latest.items()])
    keys = list({key for key, _ in latest})
    for start in range(0, len(keys), _CHUNK):
        chunk = keys[start : start + _CHUNK]
        crowded = db.execute(
            f"SELECT replay_key FROM replay_sources WHERE replay_key IN ({', '.join('?' * len(chunk))})"
            f" GROUP BY replay_key HAVING COUNT(*) > {_CROWDED}",
            chunk,
        ).fetchall()
        db.executemany(_TRIM, crowded)


def rebuild(db: sqlite3.Connection, keys: Iterable[str] | None = None) -> None:
    """From the records (a full scan): every key, or only `keys`. For the migration,
    a re-keying, and the keys a prune took sources from."""
    if keys is None:
        db.execute("DELETE FROM replay_sources")
        db.execute(
            f"INSERT INTO replay_sources SELECT replay_key, session, MAX(ts) FROM records WHERE {SQL_SERVABLE} "
            "GROUP BY replay_key, session"
        )
        db.execute(
            "DELETE FROM replay_sources WHERE ts < (SELECT ts FROM replay_sources AS newer WHERE newer.replay_key = "
            "replay_sources.replay_key"
            f" ORDER BY ts DESC LIMIT 1 OFFSET {SESSIONS_PER_KEY - 1})"
        )
        return
    for key in keys:
        db.execute("DELETE FROM replay_sources WHERE replay_key = ?", (key,))
        db.execute(_REFILL, (key,))
        db.execute(_TRIM, (key,))


def forget_pruned(db: sqlite3.Connection) -> None:
    """After records were deleted: a session with no record of a key left is no source
    of it, and a key that lost one is refilled from the records that remain (an older
    session, a named recording), so the lookup finds what the records still hold."""
    lost = {
        key
        for (key,) in db.execute(
            "DELETE FROM replay_sources WHERE NOT EXISTS (SELECT 1 FROM records"
            " WHERE records.session = replay_sources.session AND "
            "records.replay_key = replay_sources.replay_key) RETURNING replay_key"
        ).fetchall()
    }
    rebuild(db, lost)
