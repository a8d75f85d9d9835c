"""One record at a time is written on the event loop when nothing else is writing;
otherwise records take the writer thread, in order, and a held lock never waits."""

import asyncio
import sqlite3

from test_record_log import row

from shadow.sqlite_store import SQLiteStore


async def test_records_one_at_a_time_are_written_inline_and_the_wal_is_checkpointed(tmp_path):
    store = await SQLiteStore(tmp_path / "r.db").open()
    checkpoints = []
    inline = store._inline
    inline.checkpoint_every = 10
    checkpoint = inline._checkpoint

    async def counted():
        checkpoints.append(1)
        await checkpoint()

    inline._checkpoint = counted
    for n in range(25):
        await store.upsert([row(f"r{n}")])
        await asyncio.sleep(0.01)  # an agent's next call comes later: the checkpoint runs meanwhile
    await asyncio.sleep(0.05)
    assert inline.written == 25 and len(checkpoints) == 2
    assert {r["id"] for r in await store.recent(limit=100)} == {f"r{n}" for n in range(25)}
    await store.aclose()


async def test_concurrent_records_keep_their_order_and_a_held_lock_sends_records_the_usual_way(tmp_path):
    store = await SQLiteStore(tmp_path / "r.db", busy_timeout_ms=2000).open()
    # Written together: the first may go inline, the rest queue behind the writer thread;
    # the later row for an id must win (a completion after its write-ahead record).
    await asyncio.gather(*(store.upsert([row("same", status=status)]) for status in ("started", "complete")))
    assert [(r["id"], r["status"]) for r in await store.recent()] == [("same", "complete")]

    blocker = sqlite3.connect(tmp_path / "r.db", isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    written = store._inline.written
    pending = asyncio.create_task(store.upsert([row("after-lock")]))
    await asyncio.sleep(0.2)
    assert not pending.done()  # waiting in the writer thread (busy timeout), not inline and not lost
    blocker.execute("COMMIT")
    await pending
    assert store._inline.written == written
    assert "after-lock" in {r["id"] for r in await store.recent()}
    await store.aclose()
