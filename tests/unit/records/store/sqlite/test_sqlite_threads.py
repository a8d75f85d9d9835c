"""The SQLite store's threads: the writer's group commit and the checkpointer beside it."""

from __future__ import annotations

import asyncio
import sqlite3
import time

import pytest

from calls import Call, Decision, Observation, Provenance, Route
from records.record import Record
from records.store.sqlite.store import SQLiteStore
from records.store.sqlite.thread import StoreThread


class Batches:
    """A write_rows that keeps each batch it was given and fails a batch holding a row marked bad."""

    def __init__(self) -> None:
        self.batches: list[list[int]] = []

    def __call__(self, db: sqlite3.Connection, rows) -> None:
        numbers = [row["n"] for row in rows]
        self.batches.append(numbers)
        if any(row.get("bad") for row in rows):
            raise sqlite3.OperationalError("database is locked")
        db.executemany("INSERT INTO t VALUES (?)", [(n,) for n in numbers])


def memory_db() -> sqlite3.Connection:
    db = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
    db.execute("CREATE TABLE t (n INTEGER)")
    return db


async def test_rows_queued_while_a_batch_is_written_form_the_next_and_jobs_keep_their_place():
    batches = Batches()
    thread = StoreThread("test-writer", memory_db, write_rows=batches)
    try:
        # The first job holds the thread; everything queued behind it lands in order.
        hold = thread.run(lambda db: time.sleep(0.2))
        holding = asyncio.ensure_future(hold)
        await asyncio.sleep(0.05)
        writes = [asyncio.ensure_future(thread.write({"n": n})) for n in range(5)]
        seen_by_job = asyncio.ensure_future(
            thread.run(lambda db: [n for (n,) in db.execute("SELECT n FROM t ORDER BY n")])
        )
        later = [asyncio.ensure_future(thread.write({"n": n})) for n in range(5, 8)]
        await asyncio.gather(holding, *writes, *later)
        assert batches.batches == [[0, 1, 2, 3, 4], [5, 6, 7]]  # one commit each side of the job
        assert await seen_by_job == [0, 1, 2, 3, 4]  # the job ran after the rows queued before it
    finally:
        thread.close()


async def test_a_failed_batch_fails_each_of_its_writers_and_the_thread_goes_on():
    batches = Batches()
    thread = StoreThread("test-writer", memory_db, write_rows=batches)
    try:
        holding = asyncio.ensure_future(thread.run(lambda db: time.sleep(0.1)))
        await asyncio.sleep(0.02)
        failing = [asyncio.ensure_future(thread.write({"n": n, "bad": n == 1})) for n in range(3)]
        results = await asyncio.gather(holding, *failing, return_exceptions=True)
        assert [type(r).__name__ for r in results[1:]] == ["OperationalError"] * 3  # one batch: each writer learns why
        assert batches.batches == [[0, 1, 2]]
        with pytest.raises(ZeroDivisionError):  # a job's error reaches its caller only
            await thread.run(lambda db: 1 / 0)
        await thread.write({"n": 9})
        assert await thread.run(lambda db: db.execute("SELECT n FROM t").fetchall()) == [(9,)]
    finally:
        thread.close()


def record(n: int) -> Record:
    call = Call("mcp", "srv", f"tool{n % 7}", {"n": n}, f"s{n % 5}")
    return Record(
        call,
        Decision(Route.REAL, "mode", ""),
        Observation([{"type": "text", "text": "x" * 400}], Provenance.REAL),
        step=n,
        call_key=f"k{n}",
    )


@pytest.mark.serial
async def test_checkpoints_run_beside_the_writer_and_copy_the_wal_into_the_file(tmp_path):
    """The writer's own automatic checkpoint waits for thousands of pages: that the
    database file grows after 1,200 records in 60 commits shows the checkpointer ran."""
    path = tmp_path / "records.db"
    store = await SQLiteStore(path).open()
    try:
        size_before = path.stat().st_size
        for n in range(60):
            await store.upsert([record(20 * n + k).to_json() for k in range(20)])  # one commit each
        for _ in range(100):
            if store._checkpointer.checkpoints >= 4:
                break
            await asyncio.sleep(0.05)
        assert store._checkpointer.checkpoints >= 4  # one per 256 records
        assert path.stat().st_size > size_before + 100 * 1024  # the records' pages are in the file
        assert await store.count() == 1200
    finally:
        await store.aclose()


@pytest.mark.parametrize("synchronous", ["NORMAL", "OFF"])
async def test_the_checkpointer_syncs_as_the_store_is_configured(tmp_path, synchronous):
    store = await SQLiteStore(tmp_path / "records.db", synchronous=synchronous).open()
    try:
        db = store._connect_checkpointer()
        assert db.execute("PRAGMA synchronous").fetchone()[0] == {"NORMAL": 1, "OFF": 0}[synchronous]
        assert db.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
        db.close()
    finally:
        await store.aclose()
