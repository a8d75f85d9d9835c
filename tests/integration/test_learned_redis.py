"""The learned router on a Redis store (a real redis-server): statistics read with the
capped query, and a model `simroute reload` publishes loaded by a running router."""

from __future__ import annotations

import asyncio

import pytest
from typer.testing import CliRunner

from kit import write_config
from learned_kit import generate, train_and_save
from policies.learned import LearnedPolicy, LearnedSettings
from router.cli import app
from router.learned_service import LearnedService
from shadow.redis_store import RedisStore

pytestmark = pytest.mark.integration



async def test_learning_rows_and_a_published_model_on_redis(tmp_path, redis_server):
    rows = generate(120)
    store = await RedisStore(redis_server.url).open()
    await store.upsert(rows)
    page = await store.learning_rows(since=rows[10]["ts"], limit=5)
    assert [r["id"] for r in page] == [r["id"] for r in rows[10:15]]

    model = tmp_path / ".simroute" / "router.skops"
    train_and_save(model, generate(300))
    policy = LearnedPolicy(LearnedSettings(explore_rate=0.0))
    service = LearnedService(policy, store, model_path=tmp_path / "elsewhere.skops", max_divergence=0.2, confidence=0.8, watch_s=0.05)
    await service.start()
    assert service.policy.model is None and service.policy.state.labels > 120  # sim and replay labels of 120 records
    follower = asyncio.create_task(service.follow_published())
    config = write_config(tmp_path, mode="learned", store={"url": redis_server.url})
    out = await asyncio.to_thread(CliRunner().invoke, app, ["reload", "--config", str(config)])
    assert out.exit_code == 0 and "published model" in out.output, out.output
    for _ in range(100):
        if service.loads:
            break
        await asyncio.sleep(0.05)
    follower.cancel()
    assert service.loads == 1 and service.policy.model.source.startswith("redis") and set(service.policy.model.routes) == {"sim", "replay"}
    await store.aclose()
