"""A Redis record store written by the code before the rooms layout is still read:
tests/data/redis_v0_1.json.gz holds every key that code wrote (DUMP payloads, made
from the same four records as the SQLite fixture), restored into a real redis-server."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
import redis

from calls import tool_key
from records.store.protocol import ReplaySource
from records.store.redis.store import RedisStore

pytestmark = pytest.mark.integration

DATA = Path(__file__).resolve().parents[2] / "data"  # tests/data


def restore(url: str) -> int:
    keys = json.loads(gzip.decompress((DATA / "redis_v0_1.json.gz").read_bytes()))
    client = redis.Redis.from_url(url)
    for key, dumped in keys.items():
        client.restore(key, max(dumped["pttl"], 0), bytes.fromhex(dumped["value"]))
    client.close()
    return len(keys)


async def test_a_redis_store_written_by_the_earlier_layout_is_read(redis_server):
    assert restore(redis_server.url) > 0
    store = await RedisStore(redis_server.url).open()
    try:
        rows = await store.recent()
        assert [row["session"] for row in rows] == ["old-a", "old-a", "old-b", "old-b"]
        assert rows[1]["divergence"] == 0.6 and rows[1]["divergence_kind"] == "content"
        assert [info.name for info in await store.recordings()] == ["golden"]

        oslo = rows[0]["replay_key"]
        assert await store.replay_session(oslo, exclude_session="new", source=ReplaySource("golden")) == "old-b"
        replayed = await store.replay_row(oslo, session="old-a", occurrence=1)
        assert replayed is not None and replayed.record_id == rows[0]["id"]
        assert replayed.observation.content[0]["text"] == "Oslo: sunny"

        noise = await store.noise_stats(tool_key("mcp", "srv", "get_weather"))
        assert noise.pairs == 2 and noise.disagreements == {"$.content[0].text": 1}
        assert await store.load_tool_snapshot("srv") == [{"name": "get_weather", "inputSchema": {"type": "object"}}]

        await store.upsert([{**rows[3], "id": "00000000000000ff", "session": "new", "ts": rows[3]["ts"] + 10}])
        assert len(await store.recent()) == 5
    finally:
        await store.aclose()
