"""The fidelity view's world-model section on both stores: simulated calls broken down
by the model that answered (the base, the base with an adopted adapter, and answers
no model wrote), and the adoptions and reverts in order with their cards' figures;
the endpoint is token-protected as the others are. Records and adoptions are written
directly through the store and the adoption room: no model runs."""

from __future__ import annotations

import time
import uuid

import httpx2 as httpx
import pytest
from kit.dashboard import observation
from starlette.applications import Starlette

from calls import Call, Decision, Observation, Provenance, Route, Source
from records.record import Record
from records.shared_state.adopted_world_model import Adoption, LocalAdoptedWorldModel
from records.shared_state.adopted_world_model_redis import RedisAdoptedWorldModel
from records.store.model_rows import NO_MODEL
from records.store.redis.store import RedisStore
from records.store.sqlite.store import SQLiteStore
from router.auth import Tokens
from router.dashboard.metrics import CallMetrics, StoreTotals
from router.dashboard.routes import Dashboard

pytestmark = pytest.mark.integration

NOW = time.time()
BASE = "SmolLM2-135M-Instruct.Q4_1.gguf"
DIGEST = "1a2b3c4d5e6f" + "0" * 52
TUNED = f"{BASE}+adapter-{DIGEST[:12]}.gguf"
TOKEN = "ops-token-0123456789abcdef000"
FIGURES = {"fidelity": {"base": 0.41, "candidate": 0.74}, "well_formed_rate": {"base": 0.9, "candidate": 0.95}}


def record(n: int, *, model: str | None, served_real: bool = False, divergence: float | None = None) -> dict:
    """A simulated answer by `model` (None: the world model failed, simroute's error in
    its place), served, or as the shadow of a real answer with its divergence."""
    simulated = observation(Provenance.SIM, 20.0) if model else Observation.error("world model failed", Provenance.SIM)
    if model:
        simulated.source = Source(sub="model", model=model)
    route = Route.SHADOW if served_real else Route.SIM
    out = Record(
        call=Call("mcp", "weather", "forecast", {"city": "Oslo"}, f"session-{n}"),
        decision=Decision(route, "mode", str(route)),
        served=observation(Provenance.REAL, 20.0) if served_real else simulated,
        step=1,
        call_key="weather.forecast:oslo",
        ts=NOW - 600 + n,
        shadow=simulated if served_real else None,
        divergence=divergence,
        divergence_kind=None if divergence is None else "content" if divergence else "none",
    )
    out.id = f"{int(out.ts * 1e9):016x}{n:016x}"
    return out.to_json()


ROWS = [
    record(1, model=BASE),
    record(2, model=BASE, served_real=True, divergence=0.6),
    record(3, model=BASE, served_real=True, divergence=0.2),
    record(4, model=TUNED),
    record(5, model=TUNED, served_real=True, divergence=0.0),
    record(6, model=None),
    record(7, model=TUNED, served_real=True, divergence=0.1),
]


async def check(store, room) -> None:
    await store.upsert(ROWS)
    adoption = Adoption(DIGEST, "adapter", "adapter.gguf", "/runs/tuned", "2026-11-28T10:00:00+00:00", figures=FIGURES)
    await room.adopt(adoption, b"adapter")
    await room.revert()
    await room.adopt(adoption, b"adapter")
    tokens = Tokens.of({"ops": TOKEN})  # an operator token: its view shows every namespace
    dashboard = Dashboard(
        store, tokens, CallMetrics(), StoreTotals(store), adopted=room, operator_tokens=frozenset({"ops"})
    )
    app = Starlette(routes=dashboard.routes())
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://dash") as client:
        assert (await client.get("/dashboard/api/models")).status_code == 401
        response = await client.get("/dashboard/api/models", headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 200, response.text
    view = response.json()
    rows = {row["model"]: row for row in view["rows"]}
    assert set(rows) == {BASE, TUNED, NO_MODEL}
    assert (rows[BASE]["calls"], rows[BASE]["shadow_pairs"], rows[BASE]["errors"]) == (3, 2, 0)
    assert rows[BASE]["mean_divergence"] == pytest.approx(0.4)
    assert (rows[TUNED]["calls"], rows[TUNED]["shadow_pairs"], rows[TUNED]["divergent_rate"]) == (3, 2, 0.5)
    assert rows[TUNED]["mean_divergence"] == pytest.approx(0.05)
    assert (rows[NO_MODEL]["calls"], rows[NO_MODEL]["errors"], rows[NO_MODEL]["error_rate"]) == (1, 1, 1.0)
    assert view["bounded"] is False
    assert view["current"]["model"] == f"adapter-{DIGEST[:12]}.gguf" and TUNED.endswith(view["current"]["model"])
    history = view["history"]  # newest first
    assert [entry["event"] for entry in history] == ["adopted", "reverted", "adopted"]
    assert history[0]["figures"]["fidelity"] == FIGURES["fidelity"] and history[0]["run"] == "/runs/tuned"
    assert history[1]["restored"] is None


async def test_models_on_sqlite(tmp_path):
    store = await SQLiteStore(tmp_path / "records.db").open()
    try:
        await check(store, LocalAdoptedWorldModel(tmp_path / "records.adopted"))
    finally:
        await store.aclose()


async def test_models_on_redis(tmp_path, redis_server):
    store = await RedisStore(redis_server.url, prefix=f"t{uuid.uuid4().hex[:8]}").open()
    try:
        await check(store, RedisAdoptedWorldModel(store, tmp_path / "cache"))
    finally:
        await store.aclose()
