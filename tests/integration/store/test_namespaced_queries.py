"""Store queries limited to token namespaces, on SQLite and a real redis-server alike:
the world model's examples take the limit in the query (another token's newer
records never starve a session of its own and the shared ones), and a token's
dashboard views (overview, fidelity, pages) count only its namespaces' records."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
from kit.redis import RedisServer

from calls import Call, Decision, Observation, Provenance, Route
from records.record import Record
from records.store.protocol import RecordFilter
from records.store.redis.store import RedisStore
from records.store.sqlite.store import SQLiteStore

pytestmark = pytest.mark.integration

NOW = time.time()


def record(
    session: str, ts: float, text: str, *, divergence: float | None = None, recording: str | None = None
) -> dict:
    made = Record(
        Call("mcp", "srv", "get_balance", {}, session),
        Decision(Route.REAL, "mode", ""),
        Observation([{"type": "text", "text": text}], Provenance.REAL),
        step=1,
        call_key="k",
        ts=ts,
        recording=recording,
    )
    made.occurrence = 1
    made.divergence = divergence
    return made.to_json()


async def filled(store):
    """ci's one golden record first, then 40 of alice's (newer), then one of bob's."""
    await store.upsert([record("ci/golden", NOW - 100, "balance 2222", recording="golden")])
    await store.upsert(
        [record(f"alice/s{n:02}", NOW - 90 + n, "balance 1111", divergence=0.5, recording="mine") for n in range(40)]
    )
    await store.upsert([record("bob/old", NOW - 40, "balance 3333")])
    return store


@pytest.fixture(params=["sqlite", "redis"])
async def store(request, tmp_path: Path):
    if request.param == "sqlite":
        opened = await SQLiteStore(tmp_path / "records.db").open()
    else:
        server: RedisServer = request.getfixturevalue("redis_server")
        opened = await RedisStore(server.url, prefix=f"t{uuid.uuid4().hex[:8]}").open()
    try:
        yield await filled(opened)
    finally:
        await opened.aclose()


async def test_examples_take_the_namespace_limit_in_the_query(store):
    unlimited = await store.examples("mcp", "srv", "get_balance", exclude_session="bob/new", call_key=None, limit=32)
    assert {row["session"].split("/")[0] for row in unlimited} == {"alice", "bob"}  # alice's newer rows fill the limit
    assert "ci/golden" not in [row["session"] for row in unlimited]
    bobs = await store.examples(
        "mcp", "srv", "get_balance", exclude_session="bob/new", call_key="k", limit=32, namespaces=("bob/", "ci/")
    )
    assert [row["session"] for row in bobs] == ["bob/old", "ci/golden"]
    assert (
        await store.examples("mcp", "srv", "get_balance", exclude_session="x", call_key=None, limit=32, namespaces=())
        == []
    )


async def test_a_tokens_dashboard_views_count_only_its_namespaces(store):
    everyone = RecordFilter(since=NOW - 3600)
    bob = RecordFilter(since=NOW - 3600, namespaces=("bob/", "ci/"))
    assert sum(row["calls"] for row in await store.overview(everyone, bucket_s=60)) == 42
    overview = await store.overview(bob, bucket_s=60)
    assert sum(row["calls"] for row in overview) == 2 and sum(row["divergent"] for row in overview) == 0
    [tool] = await store.fidelity(bob)
    assert (tool["tool"], tool["calls"], tool["shadow_pairs"]) == ("get_balance", 2, 0)
    page = await store.page(bob, limit=50)
    assert [row["session"] for row in page] == ["bob/old", "ci/golden"]
    assert await store.page(RecordFilter(since=NOW - 3600, session="alice/s01", namespaces=("bob/",)), limit=50) == []


def judge_score(session: str, score: float) -> dict:
    """A stored judge score (records/judge/run.py `score_row`) of a simulated pair of `session`'s record."""
    return {
        "record_id": f"rec-{session}",
        "judge": "judge-model",
        "kind": "simulated",
        "prompt_version": "1",
        "ts": NOW - 30,
        "session": session,
        "channel": "mcp",
        "server": "srv",
        "tool": "get_balance",
        "route": "real",
        "divergence": 0.5,
        "score": score,
    }


async def test_a_tokens_judge_scores_are_only_its_namespaces(store):
    await store.save_judge_scores(
        [judge_score("alice/s01", 10.0), judge_score("alice/s02", 20.0), judge_score("bob/old", 90.0)]
    )
    [everyone] = await store.judge_summary(RecordFilter(since=NOW - 3600))
    assert everyone["simulated"] == {"pairs": 3, "score": 40.0}
    [bobs] = await store.judge_summary(RecordFilter(since=NOW - 3600, namespaces=("bob/", "ci/")))
    assert bobs["simulated"] == {"pairs": 1, "score": 90.0}
    assert await store.judge_summary(RecordFilter(since=NOW - 3600, namespaces=("carol/",))) == []


async def test_named_recordings_are_counted_per_namespace(store):
    everyone = {info.name: (info.sessions, info.records) for info in await store.recordings()}
    assert everyone == {"mine": (40, 40), "golden": (1, 1)}
    bobs = await store.recordings(namespaces=("bob/", "ci/"))
    assert [(info.name, info.sessions, info.records, info.first_ts) for info in bobs] == [("golden", 1, 1, NOW - 100)]
    assert await store.recordings(namespaces=("bob/",)) == []
