"""Two routers sharing Redis draw the same perturbations as one router alone: the
rules' call numbers are claimed in the shared session state, and the decision is a
pure function of them."""

from __future__ import annotations

import uuid

import pytest
from kit.engine import FakeReal, c, make_engine

from policies.perturbation import PlanConfig, compile_plan
from router.engine.perturbing import Perturber
from router.types import Session
from shadow.store.redis.session_state import RedisSessionState
from shadow.store.redis.store import RedisStore

pytestmark = pytest.mark.integration

PLAN = {
    "seed": 42,
    "rules": [
        {"name": "flaky", "kind": "error", "probability": 0.3},
        {"name": "bucket", "kind": "rate_limit", "limit": 15, "window": 20},
    ],
}


def perturber() -> Perturber:
    return Perturber({"chaos": compile_plan("chaos", PlanConfig.model_validate(PLAN))}, default="chaos")


def sequence(outcomes) -> list[str]:
    return [o.record.perturbation["kind"] if o.record.perturbation else "-" for o in outcomes]


async def test_two_replicas_sharing_redis_perturb_200_calls_as_one_router_does(tmp_path, redis_server):
    alone, _ = await make_engine(tmp_path / "alone")
    alone.perturber = perturber()
    session = Session("agent")
    expected = sequence([await alone.handle(c("agent", i=i), session, FakeReal()) for i in range(200)])
    assert 40 <= expected.count("error") <= 80 and expected.count("rate_limit") > 0

    store = RedisStore(redis_server.url, prefix=f"t{uuid.uuid4().hex[:8]}")
    a, _ = await make_engine(tmp_path / "a", store=store)
    b, _ = await make_engine(tmp_path / "b", store=store)
    for engine in (a, b):
        engine.session_state = RedisSessionState(store, ttl_s=600)
        engine.perturber = perturber()
    on_a, on_b, real = Session("agent"), Session("agent"), FakeReal()
    outcomes = []
    for i in range(200):  # the agent's calls alternate between the replicas, each with its own session object
        engine, local = (a, on_a) if i % 3 else (b, on_b)
        outcomes.append(await engine.handle(c("agent", i=i), local, real))
    assert sequence(outcomes) == expected
    assert real.calls == expected.count("-")  # no faulted call reached the real side
    await store.aclose()
