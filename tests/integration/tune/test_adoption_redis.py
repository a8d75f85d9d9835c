"""Adoption on a Redis store (a real redis-server): two routers' world models follow
the adoption `simroute tune --adopt` stores and announces; each writes the adapter's
bytes to its own cache file and swaps its model runner to the model with the adapter
within moments, and both swap back on `--revert`."""

from __future__ import annotations

import asyncio
import time

import pytest
from kit.launch import model_path, write_config
from kit.lora import write_lora_adapter
from kit.tune_run import evaluated_run
from typer.testing import CliRunner

from backends.world_model.swappable_runner import SwappableRunner
from records.shared_state.adopted_world_model_redis import RedisAdoptedWorldModel
from records.store.redis.store import RedisStore
from router.cli.main import app
from router.config import load_config
from router.runtime.simulated_side import build_model_runner
from router.runtime.world_model_adoption import AdoptionFollower

pytestmark = pytest.mark.integration


async def until(followers: list[AdoptionFollower], model: str, *, within_s: float = 30.0) -> list[str | None]:
    started = time.monotonic()
    while time.monotonic() - started < within_s:
        names = [follower.runner.model_name for follower in followers]
        if names == [model] * len(followers):
            break
        await asyncio.sleep(0.05)
    return [follower.runner.model_name for follower in followers]


async def test_every_replica_swaps_to_an_adoption_and_back(tmp_path, redis_server):
    run = tmp_path / "run"
    run.mkdir()
    adapter = write_lora_adapter(model_path(), run / "adapter.gguf", zero=True)
    evaluated_run(run, adapter, model_path())
    config = write_config(tmp_path, store={"url": redis_server.url}, world_model={"model_path": str(model_path())})
    cfg = load_config(config)
    stores, followers, tasks = [], [], []
    for replica in ("a", "b"):
        store = await RedisStore(redis_server.url).open()
        adopted = RedisAdoptedWorldModel(store, tmp_path / replica / "cache")
        follower = AdoptionFollower(cfg, SwappableRunner(build_model_runner(cfg)), adopted)
        await follower.start()
        stores.append(store)
        followers.append(follower)
        tasks.append(asyncio.create_task(follower.follow()))
    base = model_path().name
    try:
        await asyncio.sleep(0.3)  # subscribed
        out = await asyncio.to_thread(CliRunner().invoke, app, ["tune", str(run), "--adopt", "--config", str(config)])
        assert out.exit_code == 0, out.output
        digest = (await followers[0].adopted.current()).digest
        with_adapter = f"{base}+adapter-{digest[:12]}.gguf"
        assert await until(followers, with_adapter) == [with_adapter, with_adapter]
        assert (tmp_path / "a" / "cache" / f"adapter-{digest[:12]}.gguf").read_bytes() == adapter.read_bytes()
        out = await asyncio.to_thread(CliRunner().invoke, app, ["tune", "--revert", "--config", str(config)])
        assert out.exit_code == 0, out.output
        assert await until(followers, base) == [base, base]
        assert [follower.swaps for follower in followers] == [2, 2]
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for follower, store in zip(followers, stores, strict=True):
            await follower.runner.aclose()
            await store.aclose()
