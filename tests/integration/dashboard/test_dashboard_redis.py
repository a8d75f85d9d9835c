"""The dashboard's queries on a real redis-server give what SQLite gives on the same
records (Redis from aggregates kept at write time), and `simroute dashboard` serves
them from a Redis store."""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from pathlib import Path

import httpx2 as httpx
import pytest
from kit.dashboard import KNOWN_PATH, fill
from kit.launch import simroute_executable, write_config
from kit.redis import RedisServer

from records.store.protocol import RecordFilter
from records.store.redis.store import RedisStore
from records.store.sqlite.store import SQLiteStore
from router.cli.launch import free_port, stop, wait_for_port

pytestmark = pytest.mark.integration

NOW = time.time()


def rounded(rows: list[dict]) -> list[dict]:
    return [{k: (round(v, 9) if isinstance(v, float) else v) for k, v in row.items()} for row in rows]


async def test_redis_aggregates_match_sqlite_on_the_same_records(tmp_path: Path, redis_server: RedisServer):
    sqlite = await SQLiteStore(tmp_path / "records.db").open()
    redis = await RedisStore(redis_server.url, prefix=f"t{uuid.uuid4().hex[:8]}").open()
    try:
        for store in (sqlite, redis):
            filled = await fill(store, 3000, now=NOW, span_s=4 * 3600, batch=500)
            # A record rewritten (pending, then completed with its divergence) counts once.
            row = await store.record(filled["known_id"])
            await store.upsert([{**row, "status": "complete"}])
        # Minutes are the Redis overview's grain: a range starting mid-minute reads the whole minute.
        start, end = (NOW - 3 * 3600) // 600 * 600, (NOW - 3600) // 600 * 600
        for where in (
            RecordFilter(since=NOW - 86400),
            RecordFilter(since=start, until=end, channel="mcp", route="shadow"),
        ):
            assert rounded(await redis.overview(where, bucket_s=600.0)) == rounded(
                await sqlite.overview(where, bucket_s=600.0)
            )
        # Hours are the Redis fidelity table's grain: compare from an hour boundary.
        hour = (NOW - 3 * 3600) // 3600 * 3600
        for where in (RecordFilter(since=hour), RecordFilter(since=hour, tool="forecast")):
            assert rounded(await redis.fidelity(where)) == rounded(await sqlite.fidelity(where))
        # Per sub-provenance of the simulated side too (kit.dashboard's shadow sides: state, model, none).
        assert {sub for row in await redis.fidelity(RecordFilter(since=hour)) for sub in row["subs"]} == {
            "state",
            "model",
            "none",
        }
        for where in (
            RecordFilter(since=NOW - 86400),
            RecordFilter(since=NOW - 86400, tool="echo", divergent=True),
            RecordFilter(since=0, session="session-3"),
        ):
            first = await sqlite.page(where, limit=30)
            assert [r["id"] for r in await redis.page(where, limit=30)] == [r["id"] for r in first]
            older = await sqlite.page(where, before=first[-1]["id"], limit=30)
            assert [r["id"] for r in await redis.page(where, before=first[-1]["id"], limit=30)] == [
                r["id"] for r in older
            ]
            assert [r["id"] for r in await redis.page(where, after=first[3]["id"])] == [r["id"] for r in first[:3]]
        assert (await redis.record(filled["known_id"]))["divergence_evidence"]["divergent"][0]["path"] == KNOWN_PATH
    finally:
        await sqlite.aclose()
        await redis.aclose()


async def test_prune_takes_pruned_records_out_of_the_aggregates_of_both_stores(
    tmp_path: Path, redis_server: RedisServer
):
    sqlite = await SQLiteStore(tmp_path / "records.db").open()
    redis = await RedisStore(redis_server.url, prefix=f"t{uuid.uuid4().hex[:8]}").open()
    hour = (NOW - 3 * 3600) // 3600 * 3600
    try:
        for store in (sqlite, redis):
            await fill(store, 1200, now=NOW, span_s=4 * 3600, batch=400)
            assert await store.prune(before_ts=hour + 3600) > 0  # whole hours (the Redis fidelity grain) go
        remaining = await sqlite.count()
        assert await redis.count() == remaining and 0 < remaining < 1202
        for store in (sqlite, redis):
            totals = await store.aggregates()
            assert totals["total"] == remaining and sum(totals["by_route"].values()) == remaining
            overview = await store.overview(RecordFilter(since=NOW - 86400), bucket_s=600.0)
            assert sum(r["calls"] for r in overview) == remaining
        shadowed = len([r for r in await sqlite.recent() if r.get("divergence") is not None])
        assert sum(r["shadow_pairs"] for r in await redis.fidelity(RecordFilter(since=0))) == shadowed
        assert rounded(await redis.overview(RecordFilter(since=0), bucket_s=600.0)) == rounded(
            await sqlite.overview(RecordFilter(since=0), bucket_s=600.0)
        )
        assert rounded(await redis.fidelity(RecordFilter(since=0))) == rounded(
            await sqlite.fidelity(RecordFilter(since=0))
        )
    finally:
        await sqlite.aclose()
        await redis.aclose()


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
async def test_simroute_prune_leaves_the_dashboard_counting_what_remains(
    tmp_path: Path, redis_server: RedisServer, kind: str
):
    store_section = {"path": str(tmp_path / "records.db")} if kind == "sqlite" else {"url": redis_server.url}
    store = await (SQLiteStore(store_section["path"]) if kind == "sqlite" else RedisStore(redis_server.url)).open()
    try:
        await fill(store, 300, now=NOW, span_s=3 * 3600, batch=300)
    finally:
        await store.aclose()
    config = write_config(tmp_path, store={**store_section, "max_records": 100})
    pruned = subprocess.run(
        [simroute_executable(), "prune", "--config", str(config)], capture_output=True, text=True, timeout=120
    )
    assert pruned.returncode == 0 and "pruned 202 record(s)" in pruned.stdout, pruned.stdout + pruned.stderr
    store = await (SQLiteStore(store_section["path"]) if kind == "sqlite" else RedisStore(redis_server.url)).open()
    try:
        assert await store.count() == 100 and (await store.aggregates())["total"] == 100
        assert sum(r["calls"] for r in await store.overview(RecordFilter(since=0), bucket_s=600.0)) == 100
        assert sum(r["calls"] for r in await store.fidelity(RecordFilter(since=0))) == 100
    finally:
        await store.aclose()


async def test_simroute_dashboard_serves_a_redis_store(tmp_path: Path, redis_server: RedisServer):
    store = await RedisStore(redis_server.url).open()  # the prefix a config's store.url uses
    try:
        filled = await fill(store, 500, now=NOW, span_s=3600, batch=500)
    finally:
        await store.aclose()
    config = write_config(tmp_path, store={"url": redis_server.url})
    port = free_port()
    log = tmp_path / "dashboard.log"
    process = subprocess.Popen(
        [simroute_executable(), "dashboard", "--config", str(config), "--port", str(port)],
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        wait_for_port(port, process, describe=log.read_text)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10) as http:
            overview = (await http.get("/dashboard/api/overview")).json()
            records = (await http.get("/dashboard/api/records", params={"tool": "forecast", "limit": 5})).json()
            known = (await http.get("/dashboard/api/records", params={"session": "session-known"})).json()
            refused = await http.get("/dashboard/api/overview", params={"tool": "echo"})
            metrics = (await http.get("/metrics")).text
    finally:
        stop(process)
    assert sum(row["calls"] for row in overview["rows"]) == filled["count"]
    assert [r["tool"] for r in records["rows"]] == ["forecast"] * 5
    assert [r["ts"] for r in records["rows"]] == sorted((r["ts"] for r in records["rows"]), reverse=True)
    assert [r["id"] for r in known["rows"]] == [filled["diverted_id"], filled["known_id"]]  # newest first
    assert refused.status_code == 503 and "records view" in refused.json()["error"]
    assert f"simroute_store_records {float(filled['count'])}" in metrics
