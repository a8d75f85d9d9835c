"""Record ingest through simroute's record path against the raw client doing the
same unit of durability, same run, interleaved rounds.

Simroute's side runs --concurrency producers (calls in flight at once; records
written at the same time share a commit, each still durable before its write
returns); the raw client writes one record after another.

  SQLite  simroute: RecordLog.write (serialisation, the writer thread, nine indexes,
                    per-minute counts, checkpoints beside the writer)
          raw:      sqlite3 INSERT of the same JSON, one commit per record
  Redis   simroute: RecordLog.write (one Lua script per record: value + indexes)
          raw:      one XADD round trip per record with the same JSON
  spool   simroute: flushing N spooled records into SQLite (one transaction)
          raw:      executemany of the same rows in one transaction

Target: simroute >= 0.5x raw (records/s). Needs redis-server on PATH.
Rounds of 10,000 records: long enough that each round pays its share of WAL
checkpoints (a short round may fall between two).
Usage: python benchmarks/store_ingest.py [--records 10000] [--rounds 5] [--concurrency 32] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import redis
from _results import add_smoke_flag, row, write_results
from kit.redis import RedisServer

from calls import Call, Decision, Observation, Provenance, Route
from records.record import Record
from records.store.record_log import RecordLog, Spool
from records.store.redis.store import RedisStore
from records.store.sqlite.store import SQLiteStore


def record(n: int) -> Record:
    call = Call("mcp", "weather", "forecast", {"city": f"city-{n % 100}", "days": 3}, f"s{n // 20}")
    observation = Observation(
        [{"type": "text", "text": f"forecast {n}: sunny, 21 C, wind 3 m/s " * 4}], Provenance.REAL, latency_s=0.01
    )
    return Record(
        call=call,
        decision=Decision(Route.REAL, "mode", "default mode is real"),
        served=observation,
        step=n % 20,
        call_key=f"k{n % 100}",
    )


async def simroute_rate(log: RecordLog, records: list[Record], concurrency: int) -> float:
    """`concurrency` producers (agent calls in flight) each writing their records in
    turn; each write returns once its record is durable."""

    async def producer(share: list[Record]) -> None:
        for item in share:
            await log.write(item)

    started = time.perf_counter()
    await asyncio.gather(*(producer(records[k::concurrency]) for k in range(concurrency)))
    return len(records) / (time.perf_counter() - started)


def raw_sqlite_rate(path: Path, rows: list[str]) -> float:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("CREATE TABLE IF NOT EXISTS raw (id INTEGER PRIMARY KEY, body TEXT)")
    started = time.perf_counter()
    for body in rows:
        db.execute("INSERT INTO raw (body) VALUES (?)", (body,))  # autocommit: one commit per record
    rate = len(rows) / (time.perf_counter() - started)
    db.close()
    return rate


def raw_redis_rate(port: int, rows: list[str]) -> float:
    client = redis.Redis(host="127.0.0.1", port=port)
    started = time.perf_counter()
    for body in rows:
        client.xadd("raw:log", {"body": body})
    rate = len(rows) / (time.perf_counter() - started)
    client.close()
    return rate


def raw_bulk_rate(path: Path, rows: list[str]) -> float:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE IF NOT EXISTS bulk (id INTEGER PRIMARY KEY, body TEXT)")
    started = time.perf_counter()
    db.execute("BEGIN")
    db.executemany("INSERT INTO bulk (body) VALUES (?)", [(body,) for body in rows])
    db.execute("COMMIT")
    rate = len(rows) / (time.perf_counter() - started)
    db.close()
    return rate


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--verbose", action="store_true", help="print every round")
    add_smoke_flag(parser)
    args = parser.parse_args()
    if args.smoke:
        args.records, args.rounds = 200, 1
    rates: dict[str, list[float]] = {
        name: [] for name in ("sqlite", "sqlite raw", "redis", "redis raw", "spool flush", "bulk raw")
    }
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        server = RedisServer(folder).start()
        try:
            sqlite_store = await SQLiteStore(folder / "records.db").open()
            redis_store = await RedisStore(server.url).open()
            sqlite_log = await RecordLog(sqlite_store, folder / "s.spool.jsonl").start()
            redis_log = await RecordLog(redis_store, folder / "r.spool.jsonl").start()
            for round_ in range(args.rounds):
                batch = [record(round_ * args.records + n) for n in range(args.records)]
                bodies = [item.to_line() for item in batch]
                rates["sqlite"].append(await simroute_rate(sqlite_log, batch, args.concurrency))
                rates["sqlite raw"].append(raw_sqlite_rate(folder / "raw.db", bodies))
                rates["redis raw"].append(raw_redis_rate(server.port, bodies))
                rates["redis"].append(
                    await simroute_rate(
                        redis_log,
                        [record(10**7 + round_ * args.records + n) for n in range(args.records)],
                        args.concurrency,
                    )
                )
                spooled = [record(2 * 10**7 + round_ * args.records + n) for n in range(args.records)]
                Spool(folder / "s.spool.jsonl").append([item.to_json() for item in spooled])
                sqlite_log._spooling = True
                started = time.perf_counter()
                moved = await sqlite_log.flush()
                rates["spool flush"].append(moved / (time.perf_counter() - started))
                rates["bulk raw"].append(raw_bulk_rate(folder / "bulk.db", [item.to_line() for item in spooled]))
            await sqlite_log.aclose()
            await redis_log.aclose()
            await sqlite_store.aclose()
            await redis_store.aclose()
        finally:
            server.kill()
    if args.verbose:
        for name, values in rates.items():
            print(f"{name:28} " + " ".join(f"{value:9,.0f}" for value in values))
    median = {name: statistics.median(values) for name, values in rates.items()}
    print(f"{'path':28} {'records/s (median of rounds)':>30}")
    for name, value in median.items():
        print(f"{name:28} {value:30,.0f}")
    print()
    print(
        "SQLite: simroute / raw (one commit per record) = "
        f"{median['sqlite'] / median['sqlite raw']:.2f}  (target >= 0.5)"
    )
    print(
        f"Redis:  simroute / raw (one XADD per record)   = {median['redis'] / median['redis raw']:.2f}  (target >= 0.5)"
    )
    print(f"Spool flush / raw batched insert               = {median['spool flush'] / median['bulk raw']:.2f}")
    if args.smoke:
        return
    rows = [row(f"{name} records/s", value, "records/s", better="higher") for name, value in median.items()]
    rows += [
        row(
            "SQLite: simroute / raw",
            median["sqlite"] / median["sqlite raw"],
            "ratio",
            baseline="sqlite3 INSERT of the same JSON, one commit per record",
            target=">= 0.5",
            better="higher",
        ),
        row(
            "Redis: simroute / raw",
            median["redis"] / median["redis raw"],
            "ratio",
            baseline="one XADD round trip per record with the same JSON",
            target=">= 0.5",
            better="higher",
        ),
        row(
            "spool flush / raw batched insert",
            median["spool flush"] / median["bulk raw"],
            "ratio",
            baseline="executemany of the same rows in one transaction",
            better="higher",
        ),
    ]
    write_results(__file__, "Record ingest through the record path against the raw store client", rows)


if __name__ == "__main__":
    asyncio.run(main())
