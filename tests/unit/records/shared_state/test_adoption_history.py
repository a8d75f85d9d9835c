"""The adopted world model's history: every adoption (with its card's figures) and
revert appended in order, bounded to the newest HISTORY_KEPT, the same on the local
folder and on Redis (a real redis-server)."""

from __future__ import annotations

import uuid

import pytest

from records.shared_state import adopted_world_model, adopted_world_model_redis
from records.shared_state.adopted_world_model import HISTORY_KEPT, Adoption, LocalAdoptedWorldModel, NothingAdopted
from records.shared_state.adopted_world_model_redis import RedisAdoptedWorldModel
from records.store.redis.store import RedisStore

FIGURES = {"fidelity": {"base": 0.4, "candidate": 0.7}, "well_formed_rate": {"base": 0.9, "candidate": 1.0}}


def adoption(n: int) -> Adoption:
    digest = (f"{n:02d}" + uuid.uuid4().hex * 2)[:64]
    return Adoption(digest, "adapter", "adapter.gguf", f"/runs/{n}", f"2026-11-{n:02d}T10:00:00+00:00", figures=FIGURES)


async def adopt_twice_and_revert(room) -> None:
    assert await room.history() == []
    first, second = adoption(1), adoption(2)
    await room.adopt(first, b"first")
    await room.adopt(second, b"second")
    restored = await room.revert()
    assert restored is not None and restored.digest == first.digest
    history = await room.history()
    assert [entry["event"] for entry in history] == ["adopted", "adopted", "reverted"]
    assert [entry["digest"] for entry in history] == [first.digest, second.digest, second.digest]
    assert history[0]["run"] == "/runs/1" and history[0]["figures"] == FIGURES
    assert history[1]["model"] == f"adapter-{second.digest[:12]}.gguf"
    assert "previous" not in history[1]  # each entry whole, without the chain
    assert history[2]["restored"]["digest"] == first.digest
    await room.revert()
    assert (await room.history())[-1]["restored"] is None  # back to the config's own model
    with pytest.raises(NothingAdopted):
        await room.revert()
    assert len(await room.history()) == 4  # a refused revert records nothing


async def keeps_the_newest(room) -> None:
    for n in range(1, 6):
        await room.adopt(adoption(n), b"x")
    assert [entry["run"] for entry in await room.history()] == ["/runs/3", "/runs/4", "/runs/5"]


async def test_local_history_in_order(tmp_path):
    await adopt_twice_and_revert(LocalAdoptedWorldModel(tmp_path / "records.adopted"))


async def test_local_history_is_bounded(tmp_path, monkeypatch):
    assert HISTORY_KEPT == 50
    monkeypatch.setattr(adopted_world_model, "HISTORY_KEPT", 3)
    await keeps_the_newest(LocalAdoptedWorldModel(tmp_path / "records.adopted"))


async def test_redis_history_in_order_and_bounded(tmp_path, redis_server, monkeypatch):
    stores = [await RedisStore(redis_server.url, prefix=f"t{uuid.uuid4().hex[:8]}").open() for _ in range(2)]
    try:
        await adopt_twice_and_revert(RedisAdoptedWorldModel(stores[0], tmp_path / "cache"))
        monkeypatch.setattr(adopted_world_model_redis, "HISTORY_KEPT", 3)
        await keeps_the_newest(RedisAdoptedWorldModel(stores[1], tmp_path / "cache"))
    finally:
        for store in stores:
            await store.aclose()
