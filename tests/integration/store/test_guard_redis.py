"""The upstream guard's rules shared through a real redis-server (Lua scripts): the
same scenarios, on the same fake clock, as the in-process state's unit tests."""

from __future__ import annotations

import uuid

import pytest
from kit.guard import SCENARIOS

from records.shared_state.guard_slots_redis import RedisGuardState
from records.store.redis.store import RedisStore

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.__name__)
async def test_redis_guard_state(scenario, redis_server):
    store = await RedisStore(redis_server.url, prefix=f"t{uuid.uuid4().hex[:8]}").open()
    try:
        await scenario(RedisGuardState(store))
    finally:
        await store.aclose()


async def test_two_replicas_see_one_breaker_and_one_set_of_slots(redis_server):
    """Two states over one Redis (two replicas): failures through one open the other's
    breaker; a slot taken through one counts against the other's cap."""
    from kit.guard import BREAKER, T0, call

    from records.shared_state.guard_slots import Limits, Refusal
    from router.addons.upstream_guard.state import Outcome

    store = await RedisStore(redis_server.url, prefix=f"t{uuid.uuid4().hex[:8]}").open()
    a, b = RedisGuardState(store), RedisGuardState(store)
    try:
        for _ in range(3):
            await call(a, "shared", BREAKER, Outcome.FAILURE, now=T0)
        assert (await call(b, "shared", BREAKER, None, now=T0 + 1)).refusal is Refusal.BREAKER_OPEN
        capped = Limits(max_concurrent=1)
        assert (await call(a, "capped", capped, None, now=T0)).admitted
        assert (await call(b, "capped", capped, None, now=T0)).refusal is Refusal.CONCURRENCY
    finally:
        await store.aclose()
