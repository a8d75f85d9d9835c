"""Replica leases in a real Redis: a router on another host is alive while its lease
runs and dead once it ran out, so a live replica reaps what a dead one left — its
calls left `started` (marked interrupted) and its containers on a shared Docker
engine — and never a live one's. Before leases, another host's router always counted
alive."""

from __future__ import annotations

import asyncio
import subprocess
import uuid

import pytest
from kit.engine import c, make_engine

from calls import Session
from records.shared_state.replicas_redis import RedisBackendClaims, RedisReplicaLeases
from records.store.redis.store import RedisStore
from router.runtime.replica import ReplicaPresence

pytestmark = pytest.mark.integration

DEAD, LIVE, EXPIRING = "other-host-1:4242:17", "other-host-2:4242:17", "other-host-3:4242:17"
FOREIGN = "other-host-4:4242:17"  # a router of another deployment (another store) on the same Docker engine


async def started_by(engine, owner: str, session: str) -> None:
    engine.owner = owner
    await engine.write_ahead(await engine.begin(c(session, n=1), Session(session)))


async def test_a_live_replica_interrupts_only_the_calls_of_replicas_whose_lease_ran_out(tmp_path, redis_server):
    store = RedisStore(redis_server.url, prefix=f"t{uuid.uuid4().hex[:8]}")
    engine, _ = await make_engine(tmp_path, store=store)
    leases = RedisReplicaLeases(store, lease_s=1.0)
    for owner, session in ((DEAD, "dead"), (LIVE, "live"), (EXPIRING, "expiring")):
        await started_by(engine, owner, session)
    await RedisReplicaLeases(store, lease_s=60).renew(LIVE)
    await leases.renew(EXPIRING)  # one second
    presence = ReplicaPresence(leases, RedisBackendClaims(store, ttl_s=60), identity="this-host:1:1")
    presence.interrupt = store.interrupt_orphans

    assert await presence.reap() == (1, [])
    status = {s: [r["status"] for r in await store.recent(session=s)] for s in ("dead", "live", "expiring")}
    assert status == {"dead": ["interrupted"], "live": ["started"], "expiring": ["started"]}

    await asyncio.sleep(1.2)  # the expiring replica stopped renewing
    assert EXPIRING not in await leases.live() and LIVE in await leases.live()
    assert await presence.reap() == (1, [])
    assert [r["status"] for r in await store.recent(session="expiring")] == ["interrupted"]
    assert [r["status"] for r in await store.recent(session="live")] == [
        "started"
    ]  # a live replica's call is never touched
    await store.aclose()


async def test_a_backend_claim_names_the_replica_that_holds_it_and_is_released_only_by_it(redis_server):
    store = await RedisStore(redis_server.url, prefix=f"t{uuid.uuid4().hex[:8]}").open()
    claims = RedisBackendClaims(store, ttl_s=60)
    assert await claims.claim("s1", "shell", "replica-a") == "replica-a"
    assert await claims.claim("s1", "shell", "replica-b") == "replica-a"  # the first claim holds
    await claims.release("s1", "shell", "replica-b")  # not b's to release
    assert await claims.claim("s1", "shell", "replica-b") == "replica-a"
    await claims.release("s1", "shell", "replica-a")
    assert await claims.claim("s1", "shell", "replica-b") == "replica-b"
    await store.aclose()


async def test_containers_of_a_replica_on_another_host_are_removed_once_its_lease_ran_out(tmp_path, redis_server):
    """...and never those of a router that held no lease in this store (another
    deployment's, on a Docker engine both use): not this deployment's to judge."""
    import docker

    from backends.shell.container import OWNER_LABEL
    from router.runtime.replica import _reap_containers

    client = docker.from_env()
    names = {owner: f"simroute-lease-{uuid.uuid4().hex[:8]}" for owner in (DEAD, LIVE, FOREIGN)}
    for owner, name in names.items():
        subprocess.run(
            ["docker", "create", "--name", name, "--label", f"{OWNER_LABEL}={owner}", "simroute-sandbox:latest"],
            check=True,
            capture_output=True,
        )
    store = await RedisStore(redis_server.url, prefix=f"t{uuid.uuid4().hex[:8]}").open()
    try:
        leases = RedisReplicaLeases(store, lease_s=60)
        await leases.renew(LIVE)
        await RedisReplicaLeases(store, lease_s=0.05).renew(DEAD)
        await asyncio.sleep(0.2)  # DEAD held a lease here, and it ran out
        presence = ReplicaPresence(leases, None, identity="this-host:1:1")

        class Shell:  # the part of `Sandboxes` the reaper uses: the engine's client
            pass

        shell = Shell()
        shell.client = client  # type: ignore[attr-defined]
        presence.container_reapers.append(lambda is_alive: _reap_containers(shell, is_alive))  # type: ignore[arg-type]
        interrupted, removed = await presence.reap()
        assert names[DEAD] in removed and names[LIVE] not in removed and names[FOREIGN] not in removed
        left = {c.name for c in client.containers.list(all=True, filters={"label": OWNER_LABEL})}
        assert names[DEAD] not in left and names[LIVE] in left and names[FOREIGN] in left
    finally:
        subprocess.run(["docker", "rm", "-f", *names.values()], capture_output=True)
        await store.aclose()


async def test_a_retry_whose_first_request_died_with_its_replica_is_told_so_and_not_run_again(redis_server):
    from records.shared_state.answers import IdempotencyLost
    from records.shared_state.answers_redis import RedisAnswers
    from router.mcp.idempotency_keys import AnsweredOnce, digest_of

    store = await RedisStore(redis_server.url, prefix=f"t{uuid.uuid4().hex[:8]}").open()
    presence = ReplicaPresence(RedisReplicaLeases(store, lease_s=60), None, identity="this-host:1:1")
    answers = RedisAnswers(store, ttl_s=60, replica=presence.identity, alive=presence.judge)
    action = {"type": "call_tool", "tool_name": "echo", "arguments": {}}
    assert await answers.claim("episode-y", "k", DEAD, digest_of(action)) is None  # the dead replica was running it
    episode = Session("episode-y")
    ran = []

    async def produce():
        ran.append(1)
        return {}

    with pytest.raises(IdempotencyLost, match=f"running on replica {DEAD}"):
        await AnsweredOnce(answers).run(episode, "k", action, produce)
    assert ran == []
    await store.aclose()


async def test_a_browser_held_by_a_dead_replica_is_refused_before_any_chromium_starts(redis_server):
    from backends.browser.pool import BrowserPool
    from backends.errors import BackendLost
    from router.config import BrowserConfig

    store = await RedisStore(redis_server.url, prefix=f"t{uuid.uuid4().hex[:8]}").open()
    claims = RedisBackendClaims(store, ttl_s=60)
    assert await claims.claim("agent-b", "browser", DEAD) == DEAD  # the session's browser was on the dead replica
    presence = ReplicaPresence(RedisReplicaLeases(store, lease_s=60), claims, identity="this-host:1:1")
    pool = BrowserPool(BrowserConfig(isolation="host"))
    pool.before_open = lambda session_id: presence.claim(session_id, "browser", "browser (its pages and logins)")
    try:
        with pytest.raises(BackendLost, match=f"browser \\(its pages and logins\\) was lost with replica {DEAD}"):
            await pool.session("agent-b")
        assert not pool.launched  # refused before Chromium was launched
        await presence.leases.renew(LIVE)  # type: ignore[union-attr]
        assert await claims.claim("agent-c", "browser", LIVE) == LIVE  # held by a live replica: said so
        with pytest.raises(BackendLost, match=f"lives on replica {LIVE}.*sticky load balancer"):
            await pool.session("agent-c")
        assert not pool.launched
    finally:
        await pool.aclose()
        await store.aclose()
