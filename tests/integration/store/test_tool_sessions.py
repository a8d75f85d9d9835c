"""The sessions that used a tool, newest first (sequence-aligned replay's candidates),
on SQLite and a real redis-server alike: each session once, never the asking one,
only real records, only the namespaces asked for, at most the limit."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
from kit.redis import RedisServer

from calls import Call, Decision, Observation, Provenance, Route
from records.record import Record
from records.store.redis.store import RedisStore
from records.store.sqlite.store import SQLiteStore

pytestmark = pytest.mark.integration

NOW = time.time()


def record(session: str, ts: float, *, tool: str = "git_status", provenance: Provenance = Provenance.REAL) -> dict:
    made = Record(
        Call("mcp", "git", tool, {"repo_path": "/r"}, session),
        Decision(Route.REAL, "mode", ""),
        Observation([{"type": "text", "text": "clean"}], provenance),
        step=int(ts) % 1000,
        call_key="k",
        ts=ts,
    )
    made.occurrence = 1
    return made.to_json()


@pytest.fixture(params=["sqlite", "redis"])
async def store(request, tmp_path: Path):
    if request.param == "sqlite":
        opened = await SQLiteStore(tmp_path / "records.db").open()
    else:
        server: RedisServer = request.getfixturevalue("redis_server")
        opened = await RedisStore(server.url, prefix=f"t{uuid.uuid4().hex[:8]}").open()
    try:
        yield opened
    finally:
        await opened.aclose()


async def test_the_sessions_of_a_tool_newest_first(store):
    await store.upsert([record("alice/old", NOW - 50), record("alice/old", NOW - 49)])
    await store.upsert([record("ci/golden", NOW - 40), record("bob/b", NOW - 30), record("alice/new", NOW - 20)])
    await store.upsert([record("alice/old", NOW - 10)])  # alice/old's newest record is now the newest of all
    await store.upsert(
        [record("alice/sim", NOW - 5, provenance=Provenance.SIM), record("alice/log", NOW - 1, tool="git_log")]
    )
    found = await store.tool_sessions("mcp", "git", "git_status", exclude_session="alice/now", limit=8)
    assert found == ["alice/old", "alice/new", "bob/b", "ci/golden"]
    assert await store.tool_sessions("mcp", "git", "git_status", exclude_session="alice/old", limit=2) == [
        "alice/new",
        "bob/b",
    ]
    scoped = await store.tool_sessions(
        "mcp", "git", "git_status", exclude_session="alice/now", limit=8, namespaces=("alice/", "ci/")
    )
    assert scoped == ["alice/old", "alice/new", "ci/golden"]
    assert await store.tool_sessions("mcp", "git", "git_status", exclude_session="x", limit=8, namespaces=()) == []
    assert await store.tool_sessions("mcp", "git", "git_diff", exclude_session="x", limit=8) == []
