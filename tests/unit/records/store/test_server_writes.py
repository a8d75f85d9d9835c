"""Which records are writes to their server, and the store query the noise learner
asks before it learns from two answers of that server (SQLite here; Redis in
tests/integration/test_redis_store.py)."""

import math
import sqlite3

from kit.engine import check_writes_between

from records.store.server_writes import write_span
from records.store.sqlite.store import SCHEMA_VERSION, SQLiteStore


def row(**fields):
    return {
        "ts": 10.0,
        "route": "real",
        "provenance": "real",
        "status": "complete",
        "reads_only": False,
        "ended": 12.0,
        **fields,
    }


def test_write_span_of_a_record():
    assert write_span(row()) == (10.0, 12.0)
    # In flight: any time from now on.
    assert write_span(row(status="started", ended=None, provenance="none")) == (
        10.0,
        math.inf,
    )
    assert write_span(row(route="shadow", provenance="none")) == (10.0, 12.0)  # timed out: it may still have written
    assert write_span(row(route="replay")) == (10.0, 12.0)  # a replay miss served real
    for not_a_write in (
        row(reads_only=True),
        row(route="sim", provenance="sim"),
        row(route="replay", provenance="replay"),
        row(route="deny", provenance="none"),
    ):
        assert write_span(not_a_write) is None
    legacy = {"ts": 10.0, "route": "real", "provenance": "real", "status": "complete"}
    assert write_span(legacy) == (10.0, 10.0) and write_span({**legacy, "safety_class": "safe"}) is None


async def test_writes_between_on_sqlite_reads_the_partial_index(tmp_path):
    store = await SQLiteStore(tmp_path / "r.db").open()
    try:
        await check_writes_between(store)
    finally:
        await store.aclose()
    db = sqlite3.connect(tmp_path / "r.db")
    [(*_, plan)] = db.execute(
        "EXPLAIN QUERY PLAN SELECT 1 FROM records WHERE channel = "
        "? AND server = ? AND writes_until >= ? AND ts <= ? LIMIT 1",
        ("mcp", "s", 1.0, 2.0),
    ).fetchall()
    assert plan == "SEARCH records USING INDEX records_writes (channel=? AND server=? AND writes_until>?)"
    # Only the writes are in it: reads cost the index nothing.
    assert (
        db.execute("SELECT COUNT(*) FROM records INDEXED BY records_writes WHERE writes_until IS NOT NULL").fetchone()[
            0
        ]
        == 2
    )


async def test_a_version_4_store_gets_the_write_index(tmp_path):
    path = tmp_path / "r.db"
    store = await SQLiteStore(path).open()
    await store.aclose()
    db = sqlite3.connect(path)  # what a version-4 file looks like
    db.executescript(
        "DROP INDEX records_writes; ALTER TABLE records DROP COLUMN writes_until; PRAGMA user_version = 4;"
    )
    db.close()
    store = await SQLiteStore(path).open()
    try:
        await check_writes_between(store)
    finally:
        await store.aclose()
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 10
