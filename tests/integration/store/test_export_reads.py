"""The export's streaming reads on both stores, a real SQLite file and a real
redis-server holding the same records: every session once (a token's namespace
alone when asked), each session's records in (step, id) order across pages; and
`simroute export` writes the same dataset from either."""

from __future__ import annotations

import json

import pytest
from kit.export import export_dataset, synthetic_rows
from kit.launch import write_config
from kit.redis import RedisServer

from records.store.redis.store import RedisStore
from records.store.sqlite.store import SQLiteStore

pytestmark = pytest.mark.integration


def rows() -> list[dict]:
    out = synthetic_rows(0, 95)  # the last session is half full
    for row, session in zip(out[:6], ["alice/a", "alice/a", "alice/b", "bob/a", "al*ce/a", "alice0"], strict=True):
        row["session"] = session
    out[1]["step"] = out[0]["step"]  # two records at one step: ordered by id
    return out


async def stores(tmp_path, server: RedisServer) -> list:
    sqlite = await SQLiteStore(tmp_path / "records.db").open()
    redis = await RedisStore(server.url).open()
    for store in (sqlite, redis):
        await store.upsert(rows())
    return [sqlite, redis]


async def test_sessions_and_their_records_stream_in_order_on_both_stores(tmp_path, redis_server):
    expected_sessions = sorted({row["session"] for row in rows()})
    for store in await stores(tmp_path, redis_server):
        try:
            assert sorted({s async for s in store.session_ids(page=3)}) == expected_sessions
            assert sorted({s async for s in store.session_ids(prefix="alice/", page=1)}) == ["alice/a", "alice/b"]
            assert [s async for s in store.session_ids(prefix="al*ce/")] == ["al*ce/a"]  # a glob character means itself
            for session in ("alice/a", "s00000005"):
                streamed = [row async for row in store.session_rows(session, page=2)]
                wanted = sorted(
                    (row for row in rows() if row["session"] == session), key=lambda row: (row["step"], row["id"])
                )
                assert [row["id"] for row in streamed] == [row["id"] for row in wanted]
        finally:
            await store.aclose()


async def test_the_same_records_export_the_same_dataset_from_sqlite_and_redis(tmp_path, redis_server):
    for store in await stores(tmp_path, redis_server):
        await store.save_tool_snapshot("weather", [{"name": "forecast", "description": "A forecast."}])
        await store.aclose()
    datasets = {}
    for kind, store in (("sqlite", {"path": str(tmp_path / "records.db")}), ("redis", {"url": redis_server.url})):
        config = write_config(tmp_path / kind if (tmp_path / kind).mkdir() is None else tmp_path, store=store)
        card = export_dataset(config, tmp_path / f"out-{kind}", "--test-fraction", "0.3")
        assert card["source"]["store"] == kind
        files = sorted(p for p in (tmp_path / f"out-{kind}").rglob("*.jsonl"))
        # Redis lists sessions in no particular order: the same lines, maybe in another order.
        datasets[kind] = (
            {p.relative_to(tmp_path / f"out-{kind}"): sorted(p.read_text().splitlines()) for p in files},
            card["counts"],
        )
    assert datasets["sqlite"] == datasets["redis"]
    lines = datasets["sqlite"][0]
    assert all(lines.values()) and sum(len(text) for text in lines.values()) > 95  # every format and side had lines
    card = export_dataset(
        write_config(tmp_path / "redis", store={"url": redis_server.url}), tmp_path / "alice", "--token", "alice"
    )
    sessions = {
        json.loads(line)["meta"]["session"]
        for p in (tmp_path / "alice").rglob("*.jsonl")
        for line in p.read_text().splitlines()
    }
    assert sessions == {"alice/a", "alice/b"} and card["counts"]["records_read"] == 3
