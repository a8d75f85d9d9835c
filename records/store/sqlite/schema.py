"""The SQLite record store's schema and its migrations.

The schema carries a version (`PRAGMA user_version`); an older file is brought to
`SCHEMA_VERSION` in place, in one transaction, when a writer opens it.
"""

from __future__ import annotations

import sqlite3

from records.store.protocol import StoreError
from records.store.sqlite import minute_counts, replay_sources, sub_counts

SCHEMA_VERSION = 10

_TABLES = """
CREATE TABLE IF NOT EXISTS records (
    id TEXT PRIMARY KEY,
    ts REAL NOT NULL,
    session TEXT NOT NULL,
    step INTEGER NOT NULL,
    channel TEXT NOT NULL,
    server TEXT NOT NULL,
    tool TEXT NOT NULL,
    call_key TEXT NOT NULL,
    tool_key TEXT NOT NULL,
    route TEXT NOT NULL,
    provenance TEXT NOT NULL,
    status TEXT NOT NULL,
    divergence REAL,
    body TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS noise_pairs (
    tool_key TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    pairs INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS noise_paths (
    tool_key TEXT NOT NULL,
    path TEXT NOT NULL,
    disagreements INTEGER NOT NULL,
    PRIMARY KEY (tool_key, path)
);
CREATE TABLE IF NOT EXISTS meta (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS tool_snapshots (
    server TEXT PRIMARY KEY,
    digest TEXT NOT NULL,
    ts REAL NOT NULL,
    tools TEXT NOT NULL
);
"""

# Version 2: replay keys and occurrences stored per record (replay is an indexed
# lookup), named recordings, the owner of a record (write-ahead), a status index.
# Every index costs each insert: only those the hot paths and the CLI need.
_V2_COLUMNS = (
    ("replay_key", "TEXT NOT NULL DEFAULT ''"),
    ("key_scheme", "TEXT NOT NULL DEFAULT ''"),
    ("occurrence", "INTEGER NOT NULL DEFAULT 0"),
    ("recording", "TEXT"),
    ("owner", "TEXT NOT NULL DEFAULT ''"),
)
_V2_INDEXES = """
DROP INDEX IF EXISTS records_by_key;
DROP INDEX IF EXISTS records_pending;
CREATE INDEX IF NOT EXISTS records_by_tool ON records (tool_key, provenance, ts);
CREATE INDEX IF NOT EXISTS records_by_session ON records (session, step);
CREATE INDEX IF NOT EXISTS records_by_replay ON records (replay_key, session, occurrence);
CREATE INDEX IF NOT EXISTS records_by_recording ON records (recording, replay_key, ts) WHERE recording IS NOT NULL;
CREATE INDEX IF NOT EXISTS records_unfinished ON records (status, ts) WHERE status IN ('pending', 'started');
"""

# Version 3: the divergence kind is a column (the dashboard groups by it).
_V3_COLUMNS = (("divergence_kind", "TEXT"),)

# Version 4: per-minute counts kept at write time (records/store/sqlite/minute_counts.py); the
# dashboard's overview and fidelity table and /metrics' totals read them instead of
# the records, so the time index is narrow. The replay index leads with the session:
# a commit then dirties the pages of the session's own range, not one page per
# distinct call (its only query names all three).
_V4_INDEXES = """
DROP INDEX IF EXISTS records_by_ts;
CREATE INDEX records_by_ts ON records (ts);
DROP INDEX IF EXISTS records_by_replay;
CREATE INDEX records_by_replay ON records (session, replay_key, occurrence);
"""

# Version 5: when each call that may have written to its server could have done so
# (records/store/server_writes.py): `writes_until` is the end of its span (NULL: the call
# reads only, or never reached the real side). The noise learner asks whether any
# router wrote to a server between two answers; the partial index holds only the
# writes, and its range on `writes_until` starts at the first answer, so the query
# reads the writes since then, never the server's whole history. Records written
# before version 5 are not indexed: no pair the learner holds is that old.
_V5_COLUMNS = (("writes_until", "REAL"),)
_V5_INDEXES = """
CREATE INDEX IF NOT EXISTS records_writes ON records (channel, server, writes_until) WHERE writes_until IS NOT NULL;
"""

# Version 6: an insert's minute counts are added by the writer, one row per group of
# a batch, instead of by a trigger per record (records/store/sqlite/minute_counts.py).

# Version 7: replay's source lookup and the same-call examples read the latest
# sessions of each key (records/store/sqlite/replay_sources.py) instead of an index of every
# record by key, which cost a scattered page per record.

# Version 8: tool-definition pins and their changes (records/store/sqlite/tool_pins.py).
_V8_TABLES = (
    "CREATE TABLE IF NOT EXISTS tool_pins (server TEXT NOT NULL, tool TEXT NOT NULL, digest TEXT NOT NULL,"
    " ts REAL NOT NULL, definition TEXT NOT NULL, PRIMARY KEY (server, tool))",
    "CREATE TABLE IF NOT EXISTS tool_pin_changes (id INTEGER PRIMARY KEY AUTOINCREMENT, server TEXT NOT NULL,"
    " tool TEXT NOT NULL, new_digest TEXT NOT NULL, status TEXT NOT NULL, ts REAL NOT NULL, body TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS tool_pin_changes_by_tool ON tool_pin_changes (server, tool, status)",
)

# Version 9: shadow pairs per minute by the simulated side's sub-provenance
# (records/store/sqlite/sub_counts.py), read from the records' JSON: no records column.
# Version 10: a replay key's sources are rebuilt from servable records only (a session
# that simulated or perturbed the call is no source).


COLUMNS = (
    "id",
    "ts",
    "session",
    "step",
    "channel",
    "server",
    "tool",
    "call_key",
    "tool_key",
    "route",
    "provenance",
    "status",
    "divergence",
    "body",
    "replay_key",
    "key_scheme",
    "occurrence",
    "recording",
    "owner",
    "divergence_kind",
    "writes_until",
)


def migrate(db: sqlite3.Connection) -> None:
    """Bring the file to SCHEMA_VERSION (idempotent; runs in the writer thread)."""
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if version == SCHEMA_VERSION:
        return
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"the record store was written by a newer simroute (schema {version}, this one reads {SCHEMA_VERSION})"
        )
    db.execute("BEGIN IMMEDIATE")
    try:
        # executescript would commit mid-migration: statements run one by one.
        _run(db, _TABLES)
        existing = {row[1] for row in db.execute("PRAGMA table_info(records)")}
        _add_columns(db, existing, _V2_COLUMNS)
        _run(db, _V2_INDEXES)
        for name, declaration in _V3_COLUMNS:
            if name not in existing:
                db.execute(f"ALTER TABLE records ADD COLUMN {name} {declaration}")
                db.execute(f"UPDATE records SET {name} = json_extract(body, '$.{name}') WHERE divergence IS NOT NULL")
        if version < 4:  # recounting and reindexing every record: only once
            db.execute(minute_counts.TABLE)
            db.execute("DELETE FROM minute_counts")
            db.execute(minute_counts.RECOUNT_ALL)
            _run(db, _V4_INDEXES)
        _add_columns(db, existing, _V5_COLUMNS)
        _run(db, _V5_INDEXES)
        for statement in minute_counts.TRIGGERS:
            db.execute(statement)
        if version < 7:
            db.execute(replay_sources.TABLE)
            replay_sources.rebuild(db)
            db.execute("DROP INDEX IF EXISTS records_by_replay_ts")
        for statement in _V8_TABLES:
            db.execute(statement)
        if version < 9:  # counting every shadow pair: only once
            sub_counts.migrate(db)
        if 7 <= version < 10:  # a key's sources are its sessions with a servable answer only (records/servable.py)
            replay_sources.rebuild(db)
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _run(db: sqlite3.Connection, script: str) -> None:
    for statement in script.split(";"):
        if statement.strip():
            db.execute(statement)


def _add_columns(db: sqlite3.Connection, existing: set[str], columns: tuple[tuple[str, str], ...]) -> None:
    for name, declaration in columns:
        if name not in existing:
            db.execute(f"ALTER TABLE records ADD COLUMN {name} {declaration}")
