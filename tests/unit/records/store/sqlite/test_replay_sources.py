"""The SQLite store's replay sources: the latest sessions of each replay key, kept by
the writer, thinned by prune and rebuilt where the records still hold the key."""

from __future__ import annotations

import sqlite3
import time

from calls import Call, Decision, Observation, Provenance, Route
from records.record import Record
from records.store.protocol import ReplaySource
from records.store.sqlite.replay_sources import SESSIONS_PER_KEY
from records.store.sqlite.store import SQLiteStore

ANY = ReplaySource()


def record(session: str, ts: float, *, key: str = "k", recording: str | None = None) -> dict:
    made = Record(
        Call("mcp", "srv", "tool", {"q": 1}, session),
        Decision(Route.REAL, "mode", ""),
        Observation([{"type": "text", "text": f"from {session}"}], Provenance.REAL),
        step=0,
        call_key=key,
        ts=ts,
        recording=recording,
    )
    made.occurrence = 1
    return made.to_json()


async def sources(store: SQLiteStore, key: str = "k") -> list[str]:
    return [
        s
        for (s,) in await store.reader.run(
            lambda db: db.execute(
                "SELECT session FROM replay_sources WHERE replay_key = ? ORDER BY ts DESC", (key,)
            ).fetchall()
        )
    ]


async def test_the_newest_sessions_of_a_key_are_kept_and_an_old_record_arriving_late_displaces_none(tmp_path):
    store = await SQLiteStore(tmp_path / "records.db").open()
    try:
        now = time.time()
        sessions = 3 * SESSIONS_PER_KEY
        for n in range(sessions):
            await store.upsert([record(f"s{n:02}", now + n)])
            assert len(await sources(store)) <= 2 * SESSIONS_PER_KEY  # trimmed back once it holds twice the kept
        await store.upsert([record(f"s{n:02}", now + n, key="other") for n in range(3)])  # one batch, another key
        newest = [f"s{n:02}" for n in range(sessions - 1, sessions - 1 - SESSIONS_PER_KEY, -1)]
        assert (await sources(store))[:SESSIONS_PER_KEY] == newest
        assert await store.replay_session("k", exclude_session="agent", source=ANY) == newest[0]
        # Never the asking session.
        assert await store.replay_session("k", exclude_session=newest[0], source=ANY) == newest[1]
        await store.upsert([record("late", now - 100)])  # a spooled record of an older session
        assert (await sources(store))[:SESSIONS_PER_KEY] == newest
        await store.upsert([record("s03", now + 100)])  # an old session calling again is the newest again
        assert (await sources(store))[0] == "s03"
        examples = await store.examples("mcp", "srv", "tool", exclude_session="s03", call_key="k", limit=3)
        assert [e["session"] for e in examples] == newest[:3]  # the same call, newest first, not the asking session
    finally:
        await store.aclose()


async def test_a_prune_that_takes_a_keys_sources_refills_them_from_what_the_records_still_hold(tmp_path):
    store = await SQLiteStore(tmp_path / "records.db").open()
    try:
        now = time.time()
        await store.upsert([record("golden", now - 1000, recording="golden")])  # named recordings are never pruned
        plain = 2 * SESSIONS_PER_KEY + 2
        for n in range(plain):
            await store.upsert([record(f"s{n:02}", now - 500 + n)])
        assert "golden" not in await sources(store)  # trimmed: older than the newest
        assert await store.prune(before_ts=now) == plain
        assert await sources(store) == ["golden"]
        assert await store.replay_session("k", exclude_session="agent", source=ANY) == "golden"
    finally:
        await store.aclose()


async def test_a_version_6_store_gets_its_replay_sources_from_its_records(tmp_path):
    path = tmp_path / "records.db"
    store = await SQLiteStore(path).open()
    now = time.time()
    await store.upsert([record(f"s{n}", now + n) for n in range(3)])
    await store.aclose()
    db = sqlite3.connect(path)  # what a version-6 file looks like: an index by key, no sources
    db.executescript(
        "DROP TABLE replay_sources; CREATE INDEX records_by_replay_ts "
        "ON records (replay_key, ts); PRAGMA user_version = 6;"
    )
    db.close()
    store = await SQLiteStore(path).open()
    try:
        assert await sources(store) == ["s2", "s1", "s0"]
        assert await store.replay_session("k", exclude_session="s2", source=ANY) == "s1"
        indexes = await store.reader.run(
            lambda db: {n for (n,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        )
        assert "records_by_replay_ts" not in indexes
    finally:
        await store.aclose()
