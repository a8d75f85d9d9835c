"""Two routers sharing Redis draw the same perturbations as one router alone: the
rules' call numbers are claimed in the shared session state, and the decision is a
pure function of them."""

from __future__ import annotations

import uuid

import pytest
from kit.engine import FakeReal, c, make_engine

from calls import Session
from policies.perturbation import PlanConfig, compile_plan
from records.shared_state.session_state_redis import RedisSessionState
from records.store.redis.store import RedisStore
from router.addons.perturbation.addon import Perturber
from router.runtime.addon_chain import shared_slices

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
    alone.addons.add(perturber())
    session = Session("agent")
    expected = sequence([await alone.handle(c("agent", i=i), session, FakeReal()) for i in range(200)])
    assert 40 <= expected.count("error") <= 80 and expected.count("rate_limit") > 0

    store = RedisStore(redis_server.url, prefix=f"t{uuid.uuid4().hex[:8]}")
    a, _ = await make_engine(tmp_path / "a", store=store)
    b, _ = await make_engine(tmp_path / "b", store=store)
    for engine in (a, b):
        engine.session_state = RedisSessionState(store, ttl_s=600, loaded=shared_slices())
        engine.addons.add(perturber())
    on_a, on_b, real = Session("agent"), Session("agent"), FakeReal()
    outcomes = []
    for i in range(200):  # the agent's calls alternate between the replicas, each with its own session object
        engine, local = (a, on_a) if i % 3 else (b, on_b)
        outcomes.append(await engine.handle(c("agent", i=i), local, real))
    assert sequence(outcomes) == expected
    assert real.calls == expected.count("-")  # no faulted call reached the real side
    await store.aclose()


def test_two_serve_processes_sharing_redis_answer_an_http_session_with_the_plans_own_sequence(
    tmp_path, redis_server, upstream
):
    """200 requests of one agent session (`X-Simroute-Session`) spread over two
    `simroute serve` processes with one Redis store: the faults are the sequence the
    plan decides alone, call number by call number; a second session sees it again."""
    import httpx2 as httpx
    from kit.launch import free_port, write_config
    from kit.serve import serving

    plan = {
        "seed": 42,
        "rules": [
            {"name": "flaky", "kind": "error", "probability": 0.3, "match": {"channel": "http"}},
            {"name": "bucket", "kind": "rate_limit", "limit": 15, "window": 20, "match": {"channel": "http"}},
        ],
    }
    compiled = compile_plan("chaos", PlanConfig.model_validate(plan))
    expected = []
    for n in range(1, 201):
        found = compiled.decide([(rule, n) for rule in compiled.rules], seed=42, key="", step=n - 1)
        expected.append({None: 200, "error": 503, "rate_limit": 429}[found.kind if found else None])
    assert 40 <= expected.count(503) <= 80 and expected.count(429) > 0

    ports = [free_port(), free_port()]
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
    configs = [
        write_config(
            tmp_path / name, store={"url": redis_server.url}, perturbations={"apply": "chaos", "plans": {"chaos": plan}}
        )
        for name in ("one", "two")
    ]
    with (
        serving(configs[0], tmp_path / "one.log", http_port=ports[0]),
        serving(configs[1], tmp_path / "two.log", http_port=ports[1]),
    ):
        clients = [httpx.Client(proxy=f"http://127.0.0.1:{port}", timeout=30) for port in ports]
        for session in ("agent-1", "agent-2"):
            seen = [
                clients[i % 2].get(f"{upstream}/json", headers={"X-Simroute-Session": session}).status_code
                for i in range(200)
            ]
            assert seen == expected, session
        for client in clients:
            client.close()


async def test_a_listing_paginated_on_one_replica_is_followed_on_the_other(tmp_path, redis_server):
    import json

    from calls import Observation, Provenance
    from router.addons.perturbation.pages import next_cursor

    store = RedisStore(redis_server.url, prefix=f"t{uuid.uuid4().hex[:8]}")
    a, _ = await make_engine(tmp_path / "a", store=store)
    b, _ = await make_engine(tmp_path / "b", store=store)
    plan = {"seed": 1, "rules": [{"name": "pages", "kind": "paginate", "page_size": 2}]}
    for engine in (a, b):
        engine.session_state = RedisSessionState(store, ttl_s=600, loaded=shared_slices())
        engine.addons.add(Perturber({"p": compile_plan("p", PlanConfig.model_validate(plan))}, default="p"))
    asked = []

    async def listing(call):
        asked.append(call)
        value = {"items": list(range(5))}
        return Observation([{"type": "text", "text": json.dumps(value)}], Provenance.REAL, structured=value)

    first = await a.handle(c("agent"), Session("agent"), listing)
    second = await b.handle(
        c("agent", cursor=next_cursor(first.observation)), Session("agent"), listing
    )  # b never saw page 1
    third = await a.handle(c("agent", cursor=next_cursor(second.observation)), Session("agent"), listing)
    assert [o.observation.structured["items"] for o in (first, second, third)] == [[0, 1], [2, 3], [4]]
    assert next_cursor(third.observation) is None and len(asked) == 1
    await store.aclose()
