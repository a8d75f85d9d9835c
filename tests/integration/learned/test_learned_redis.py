"""The learned router on a Redis store (a real redis-server): statistics read with the
capped query, a model `simroute reload` publishes loaded by a running replica within
moments (the announcement, not the poll), and a side effect one replica ran in a
session stopping replay of that server on another replica."""

from __future__ import annotations

import asyncio
import dataclasses
import subprocess
import time
import uuid

import pytest
from kit.engine import FakeReal, FakeSimulator, make_engine
from kit.launch import _child_environment, simroute_executable, write_config
from kit.learned import generate, train_and_save
from typer.testing import CliRunner

from calls import Call, Mode, Route, Session
from policies.chain import default_policies
from policies.learned import LearnedPolicy, LearnedSettings, StateBuilder
from policies.marks import SideEffects
from policies.safety import SafetyClassifier
from records.shared_state.published_models_redis import RedisPublishedModels
from records.shared_state.session_state_redis import RedisSessionState
from records.store.redis.store import RedisStore
from router.cli.main import app
from router.runtime.addon_chain import shared_slices
from router.runtime.learned_service import LearnedService

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
    service = LearnedService(
        policy,
        store,
        model_path=tmp_path / "elsewhere.skops",
        max_divergence=0.2,
        prior_strength=4.0,
        watch_s=0.05,
        published=RedisPublishedModels(store),
    )
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
    assert (
        service.loads == 1
        and service.policy.model.source.startswith("redis")
        and set(service.policy.model.routes) == {"sim", "replay"}
    )
    await store.aclose()


async def test_a_replica_loads_a_model_within_moments_of_simroute_reload(tmp_path, redis_server):
    """The version key is polled only every 30 s here: a load within 2 s of `simroute
    reload` (launched as a user runs it) comes from the announcement on the channel."""
    store = await RedisStore(redis_server.url).open()
    train_and_save(tmp_path / ".simroute" / "router.skops", generate(300))
    config = write_config(tmp_path, mode="learned", store={"url": redis_server.url})
    service = LearnedService(
        LearnedPolicy(LearnedSettings(explore_rate=0.0)),
        store,
        model_path=tmp_path / "elsewhere.skops",
        max_divergence=0.2,
        prior_strength=4.0,
        publish_poll_s=30.0,
        published=RedisPublishedModels(store),
    )
    follower = asyncio.create_task(service.follow_published())
    try:
        await asyncio.sleep(0.5)  # subscribed (and the empty version key read)
        assert service.loads == 0
        for round_ in (1, 2):  # a second reload of the same file is announced and loaded too (a new version)
            if round_ == 2:
                train_and_save(tmp_path / ".simroute" / "router.skops", generate(300, seed=1))
            reload = await asyncio.to_thread(
                subprocess.run,
                [simroute_executable(), "reload", "--config", str(config)],
                env=_child_environment(),
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert reload.returncode == 0 and "published model" in reload.stdout, reload.stderr
            published = time.monotonic()
            while service.loads < round_ and time.monotonic() - published < 2.0:
                await asyncio.sleep(0.02)
            assert service.loads == round_, f"not loaded within 2 s of `simroute reload` (round {round_})"
            assert service.policy.model.source.startswith("redis") and service.policy.model.digest in reload.stdout
    finally:
        follower.cancel()
        await asyncio.gather(follower, return_exceptions=True)
        await store.aclose()


async def test_a_side_effect_on_one_replica_stops_replay_on_another(tmp_path, redis_server):
    """Replicas A and B serve one agent session over one Redis. B replays `get_motto`
    until A runs `add_motto` (a side effect on the same server) for that session; B's
    next `get_motto` is then not replayed (its recording is stale), though B itself
    never saw the side effect."""
    store = RedisStore(redis_server.url, prefix=f"t{uuid.uuid4().hex[:8]}")
    a, _ = await make_engine(tmp_path / "a", store=store)
    b, _ = await make_engine(tmp_path / "b", store=store)
    real = FakeReal()
    motto = Call("mcp", "srv", "get_motto", {}, "agent")
    await a.handle(dataclasses.replace(motto, session_id="rec"), Session("rec"), real)  # the recording B would replay

    rows = [r for r in generate(600) if r["tool"] == "get_motto"][:40]
    for r in rows:  # a tool whose sim and replay are trusted (faithful labels)
        r["divergence"], r["divergence_kind"] = 0.0, "none"
    builder = StateBuilder(max_divergence=0.2)
    builder.add(rows)
    state = dataclasses.replace(builder.snapshot(), recorded_keys=frozenset({a.replay.keys(motto).replay}))
    for engine in (a, b):
        engine.session_state = RedisSessionState(store, ttl_s=600, loaded=shared_slices())
        engine.simulator = FakeSimulator()
        policy = LearnedPolicy(
            LearnedSettings(explore_rate=0.0),
            replay_key_of=lambda call, e=engine: e.replay.keys(call).replay,
            state=state,
        )
        engine.policies = default_policies(rules=[], mode=Mode.LEARNED, classifier=SafetyClassifier(), learned=policy)

    on_a, on_b = Session("agent"), Session("agent")  # each replica's own object for the agent's session
    before = await b.handle(motto, on_b, real)
    assert before.record.decision.route is Route.REPLAY, before.record.decision.reason
    changed = await a.handle(Call("mcp", "srv", "add_motto", {"text": "carpe diem"}, "agent"), on_a, real)
    assert changed.record.decision.route is Route.REAL and changed.record.decision.safety == "side_effect"
    assert on_b.slice(SideEffects).calls == set()  # B has not heard of it in memory
    after = await b.handle(motto, on_b, real)
    assert after.record.decision.route is Route.SIM, after.record.decision.reason
    assert "not eligible after a real call with side effects ('add_motto' on 'srv')" in after.record.decision.reason
    # Another agent session is not affected.
    other = await b.handle(dataclasses.replace(motto, session_id="other"), Session("other"), real)
    assert other.record.decision.route is Route.REPLAY
    await store.aclose()


async def test_a_replica_started_after_a_publish_loads_the_published_model(tmp_path, redis_server):
    """The announcement is gone by the time this replica subscribes: it reads the
    published version once subscribed, without waiting for the poll."""
    store = await RedisStore(redis_server.url).open()
    train_and_save(tmp_path / ".simroute" / "router.skops", generate(300))
    config = write_config(tmp_path, mode="learned", store={"url": redis_server.url})
    out = await asyncio.to_thread(CliRunner().invoke, app, ["reload", "--config", str(config)])
    assert out.exit_code == 0, out.output
    service = LearnedService(
        LearnedPolicy(LearnedSettings(explore_rate=0.0)),
        store,
        model_path=tmp_path / "elsewhere.skops",
        max_divergence=0.2,
        prior_strength=4.0,
        publish_poll_s=30.0,
        published=RedisPublishedModels(store),
    )
    follower = asyncio.create_task(service.follow_published())
    try:
        for _ in range(100):
            if service.loads:
                break
            await asyncio.sleep(0.02)
        assert service.loads == 1 and service.policy.model.digest in out.output
    finally:
        follower.cancel()
        await asyncio.gather(follower, return_exceptions=True)
        await store.aclose()
