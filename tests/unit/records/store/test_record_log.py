"""Records are never lost: the spool that cannot jam, the busy store, the schema migration."""

import asyncio
import json
import sqlite3
import stat

import pytest
from kit.engine import FakeReal, c, make_engine

from calls import Session
from records.store.protocol import RecordError
from records.store.record_log import RecordLog, Spool
from records.store.sqlite.store import SCHEMA_VERSION, SQLiteStore


def row(record_id, **extra):
    base = {
        "id": record_id,
        "ts": 1.0,
        "session": "s",
        "step": 0,
        "channel": "mcp",
        "server": "srv",
        "tool": "t",
        "arguments": {},
        "call_key": "k",
        "route": "real",
        "policy": "mode",
        "reason": "",
        "note": "",
        "provenance": "real",
        "latency_ms": 0,
        "observation": {"content": [], "provenance": "real"},
        "shadow": None,
        "divergence": None,
        "status": "complete",
    }
    return {**base, **extra}


async def test_a_half_written_spool_line_never_blocks_later_records(tmp_path):
    store = await SQLiteStore(tmp_path / "r.db").open()
    spool_path = tmp_path / "r.spool.jsonl"
    spool_path.write_text(json.dumps(row("a")) + "\n" + '{"id": "b", "ts": 1.0, "sess')  # a crash mid-write
    Spool(spool_path).append([row("c")])  # the next writer ends the broken line first
    log = await RecordLog(store, spool_path).start()
    assert sorted(r["id"] for r in await store.recent()) == ["a", "c"]
    assert log.quarantined == 1 and '"id": "b"' in log.spool.quarantine_path.read_text()
    assert stat.S_IMODE(log.spool.quarantine_path.stat().st_mode) == 0o600
    assert spool_path.read_text() == ""


async def test_spool_lines_are_upserts_a_later_line_wins(tmp_path):
    store = await SQLiteStore(tmp_path / "r.db").open()
    spool = Spool(tmp_path / "r.spool.jsonl")
    spool.append([row("a", status="started")])
    spool.append([row("a", status="complete")])
    await RecordLog(store, spool.path).start()
    assert [(r["id"], r["status"]) for r in await store.recent()] == [("a", "complete")]


async def test_a_locked_store_spools_and_flushes_when_it_frees(tmp_path):
    engine, store = await make_engine(tmp_path)
    blocker = sqlite3.connect(tmp_path / "r.db", isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # another process holding the write lock
    session = Session("a")
    for n in range(3):
        await engine.handle(c("a", n=n), session, FakeReal(), read_only=True)
    assert engine.records.spooled == 3 and len((tmp_path / "r.spool.jsonl").read_text().splitlines()) == 3
    blocker.execute("COMMIT")
    for _ in range(40):
        await asyncio.sleep(0.1)
        if len(await store.recent()) == 3:
            break
    assert [r["arguments"]["n"] for r in await store.recent()] == [0, 1, 2]  # flushed in order
    await engine.records.aclose()


async def test_neither_store_nor_spool_fails_the_call_closed(tmp_path):
    engine, store = await make_engine(tmp_path)
    blocker = sqlite3.connect(tmp_path / "r.db", isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    engine.records.spool.path = tmp_path / "no-such-dir-file" / "x.jsonl"
    (tmp_path / "no-such-dir-file").write_text("a file where the spool's folder should be")
    real = FakeReal()
    outcome = await engine.handle(c("a", n=1), Session("a"), real)  # a write-ahead record cannot be written
    assert real.calls == 0 and outcome.observation.is_error and "cannot record this call" in outcome.observation.text
    with pytest.raises(RecordError):
        await engine.records.write(outcome.record)
    blocker.execute("ROLLBACK")


async def test_store_files_are_private_and_an_old_schema_is_migrated(tmp_path):
    old = tmp_path / "old" / "records.db"
    old.parent.mkdir()
    db = sqlite3.connect(old)
    db.executescript(
        "CREATE TABLE records (id TEXT PRIMARY KEY, ts REAL NOT NULL, session TEXT NOT NULL, step INTEGER NOT NULL,"
        " channel TEXT NOT NULL, server TEXT NOT NULL, tool TEXT "
        "NOT NULL, call_key TEXT NOT NULL, tool_key TEXT NOT NULL,"
        " route TEXT NOT NULL, provenance TEXT NOT NULL, status TEXT NOT NULL, divergence REAL, body TEXT NOT NULL);"
    )
    db.execute(
        "INSERT INTO records VALUES ('x', 1, 's', 0, 'mcp', 'srv', "
        "'t', 'k', 'tk', 'real', 'real', 'complete', NULL, ?)",
        (json.dumps(row("x")),),
    )
    db.commit()
    db.close()
    store = await SQLiteStore(old).open()
    assert [r["id"] for r in await store.recent()] == ["x"]  # an existing .simroute/records.db keeps working
    assert sqlite3.connect(old).execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    await store.aclose()

    fresh = tmp_path / "new" / "records.db"
    store = await SQLiteStore(fresh).open()
    await store.upsert([row("y")])
    await store.aclose()
    assert stat.S_IMODE(fresh.parent.stat().st_mode) == 0o700 and stat.S_IMODE(fresh.stat().st_mode) == 0o600


async def test_example_lookup_is_capped_and_puts_the_same_call_first(tmp_path):
    store = await SQLiteStore(tmp_path / "r.db").open()
    rows = [row(f"r{i}", ts=float(i), session=f"s{i}", call_key="same" if i == 3 else f"k{i}") for i in range(50)]
    await store.upsert(rows)
    found = await store.examples("mcp", "srv", "t", exclude_session="now", call_key="same", limit=5)
    assert [r["id"] for r in found] == ["r3", "r49", "r48", "r47", "r46"]
    plan = (
        sqlite3.connect(tmp_path / "r.db")
        .execute(
            "EXPLAIN QUERY PLAN SELECT id, body FROM records WHERE tool_key = ? AND provenance = 'real' AND session "
            "!= ? ORDER BY ts DESC LIMIT ?",
            ("x", "y", 5),
        )
        .fetchall()
    )
    assert "USING INDEX records_by_tool" in " ".join(str(step) for step in plan)


async def test_retention_on_sqlite(tmp_path):
    from kit.engine import check_retention

    engine, store = await make_engine(tmp_path)
    await check_retention(engine, store)


async def test_noise_table_on_sqlite(tmp_path):
    from kit.engine import check_noise_table

    engine, store = await make_engine(tmp_path)
    await check_noise_table(engine, store)


_SPOOL_WRITER = """
import sys
from records.store.record_log import Spool
path, name, count, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
spool = Spool(path)
print("ready", flush=True)
sys.stdin.readline()  # every writer starts at the same moment
for n in range(count):
    spool.append([{"id": f"{name}-{n}", "writer": name, "n": n, "payload": name[-1] * size}])
"""


def test_several_processes_share_one_spool_and_take_loses_no_line(tmp_path):
    """Writers in other processes append while this one takes: every line arrives
    once, whole (the file lock keeps a take from truncating a line appended after
    its read, and appends from interleaving)."""
    import os
    import subprocess
    import sys
    import time
    from pathlib import Path

    spool = Spool(tmp_path / "r.spool.jsonl")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[4])}
    writers, count, size = ("wa", "wb", "wc"), 150, 20_000  # lines far larger than a pipe's atomic write
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", _SPOOL_WRITER, str(spool.path), name, str(count), str(size)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        for name in writers
    ]
    for process in processes:
        assert process.stdout.readline().strip() == "ready"
    for process in processes:
        process.stdin.write("go\n")
        process.stdin.flush()
    taken: list[dict] = []
    bad_lines = takes = 0

    def apply(rows):
        time.sleep(0.002)  # a take that is slow to store its rows: appends keep coming meanwhile
        taken.extend(rows)

    while any(process.poll() is None for process in processes):
        _, bad = spool.take(apply)
        bad_lines += bad
        takes += 1
    _, bad = spool.take(apply)
    bad_lines += bad
    assert [process.wait(30) for process in processes] == [0, 0, 0]
    assert takes > 1  # the takes really ran while the writers appended
    assert bad_lines == 0 and spool.quarantined() == 0  # no interleaved or broken line
    ids = [row["id"] for row in taken]
    assert len(ids) == len(set(ids)) == len(writers) * count  # nothing lost, nothing taken twice
    assert sorted(ids) == sorted(f"{name}-{n}" for name in writers for n in range(count))
    assert all(row["payload"] == row["writer"][-1] * size for row in taken)  # every line intact
    for name in writers:  # each writer's lines in the order it appended them
        assert [row["n"] for row in taken if row["writer"] == name] == list(range(count))
    assert spool.path.read_text() == ""
