"""Tool pins and their changes in both stores (real SQLite file, real Redis server): first
sight wins, a change is recorded once and supersedes an older one, accept pins it."""

from __future__ import annotations

import asyncio

import pytest
from kit.redis import RedisServer

from records.store.redis.store import RedisStore
from records.store.sqlite.store import SQLiteStore
from router.engine.tool_pin_checks import Pin, reconcile

LOOKUP = {"name": "lookup", "description": "Look up a word.", "inputSchema": {"type": "object"}}


@pytest.fixture(params=["sqlite", "redis"])
async def store(request, tmp_path):
    if request.param == "sqlite":
        opened = await SQLiteStore(tmp_path / "records.db").open()
        yield opened
        await opened.aclose()
        return
    server = RedisServer(tmp_path).start()
    try:
        opened = await RedisStore(server.url).open()
        yield opened
        await opened.aclose()
    finally:
        server.stop()


def change_to(description: str, *, ts: float) -> dict:
    pin = Pin.of("dict", LOOKUP, ts=1.0)
    return reconcile("dict", {"lookup": pin}, [{**LOOKUP, "description": description}], now=ts).changes[0].to_row()


async def test_first_sight_wins(store):
    await store.add_pins([Pin.of("dict", LOOKUP, ts=1.0).to_row()])
    await store.add_pins([Pin.of("dict", {**LOOKUP, "description": "later"}, ts=2.0).to_row()])
    [pin] = await store.pins("dict")
    assert (pin["tool"], pin["definition"]["description"], pin["ts"]) == ("lookup", "Look up a word.", 1.0)
    assert await store.pins("other") == []


async def test_a_change_is_recorded_once_superseded_and_accepted(store):
    await store.add_pins([Pin.of("dict", LOOKUP, ts=1.0).to_row()])
    assert await store.add_pin_change(change_to("first pull", ts=2.0)) is True
    assert await store.add_pin_change(change_to("first pull", ts=3.0)) is False  # another replica saw the same change
    assert await store.add_pin_change(change_to("second pull", ts=4.0)) is True
    changes = await store.pin_changes("dict")
    assert [(c["definition"]["description"], c["status"]) for c in changes] == [
        ("first pull", "superseded"),
        ("second pull", "pending"),
    ]
    assert [c["definition"]["description"] for c in await store.pin_changes(status="pending")] == ["second pull"]

    assert await store.end_pin_changes("dict", ["define"], "accepted") == []  # no change of that tool
    [accepted] = await store.end_pin_changes("dict", None, "accepted")
    assert accepted["status"] == "accepted" and accepted["definition"]["description"] == "second pull"
    [pin] = await store.pins("dict")
    assert (pin["digest"], pin["definition"]["description"]) == (accepted["new_digest"], "second pull")
    assert await store.pin_changes(status="pending") == []
    assert await store.end_pin_changes("dict", None, "accepted") == []


async def test_a_change_two_redis_replicas_see_at_once_is_new_to_one_of_them(redis_server):
    replicas = [await RedisStore(redis_server.url).open() for _ in range(2)]
    try:
        await replicas[0].add_pins([Pin.of("dict", LOOKUP, ts=1.0).to_row()])
        seen = await asyncio.gather(
            *(replicas[n % 2].add_pin_change(change_to("pulled", ts=2.0 + n)) for n in range(20))
        )
        assert seen.count(True) == 1  # one listing records the change; the others find it pending
        [change] = await replicas[1].pin_changes("dict")
        assert (change["definition"]["description"], change["status"]) == ("pulled", "pending")
    finally:
        for replica in replicas:
            await replica.aclose()
