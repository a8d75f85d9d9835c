"""The fidelity table's router columns: the learned router's decision and P(ok) per
tool, from a trained model and per-tool statistics on a real SQLite store; "not
available yet" (None) without a model card."""

from __future__ import annotations

import pytest
from kit.learned import generate, train_and_save

from policies.learned import LearnedPolicy, LearnedSettings
from policies.learned.persistence import card_path
from records.store.protocol import RecordFilter
from records.store.sqlite.store import SQLiteStore
from router.dashboard.outlook import RouterOutlook
from router.runtime.learned_service import LearnedService


@pytest.fixture
async def store(tmp_path):
    store = await SQLiteStore(tmp_path / "r.db").open()
    await store.upsert(generate(900))
    yield store
    await store.aclose()


def outlook_on(store, model_path) -> RouterOutlook:
    def make() -> LearnedService:
        policy = LearnedPolicy(LearnedSettings(min_labels=20, explore_rate=0.0))
        return LearnedService(policy, store, model_path=model_path, max_divergence=0.2, prior_strength=4.0)

    return RouterOutlook(card_path(model_path), store, make_service=make, refresh_s=0.0)


async def test_without_a_model_card_the_router_columns_are_not_available_yet(tmp_path, store):
    rows = await store.fidelity(RecordFilter(since=0))
    await outlook_on(store, tmp_path / "router.skops").annotate(rows)
    assert {r["tool"] for r in rows} == {"get_motto", "get_visits", "get_weather"}
    assert all(r["router"] is None for r in rows)


async def test_with_a_trained_model_each_tool_shows_the_decision_and_its_probabilities(tmp_path, store):
    model = tmp_path / "router.skops"
    train_and_save(model, generate(900))
    outlook = outlook_on(store, model)
    rows = {r["tool"]: r for r in await store.fidelity(RecordFilter(since=0))}
    await outlook.annotate(list(rows.values()))
    motto, visits = rows["get_motto"]["router"], rows["get_visits"]["router"]
    probability = {tool: {c["route"]: c for c in rows[tool]["router"]["candidates"]} for tool in rows}
    # The constant tool is faithful on every route: the router sends it off the real side.
    assert motto["decision"] in ("replay", "sim") and motto["safety"] == "safe"
    assert probability["get_motto"]["sim"]["probability"] >= probability["get_motto"]["sim"]["threshold"]
    assert probability["get_motto"]["sim"]["source"].startswith("model ")  # trained and enough labels
    # The counter is never simulated faithfully: it stays real, its P(ok) low.
    assert visits["decision"] == "real" and probability["get_visits"]["sim"]["probability"] < 0.3
    assert "P(ok)=" in visits["reason"] and visits["example"] is not None


async def test_the_per_tool_estimate_stands_in_for_a_route_with_too_few_labels(tmp_path, store):
    model = tmp_path / "router.skops"
    train_and_save(model, generate(900))

    def make() -> LearnedService:
        policy = LearnedPolicy(LearnedSettings(min_labels=100_000, explore_rate=0.0))
        return LearnedService(policy, store, model_path=model, max_divergence=0.2, prior_strength=4.0)

    rows = await store.fidelity(RecordFilter(since=0, tool="get_motto"))
    await RouterOutlook(card_path(model), store, make_service=make).annotate(rows)
    sim = next(c for c in rows[0]["router"]["candidates"] if c["route"] == "sim")
    # The Beta-Binomial lower bound.
    assert sim["source"].startswith("per-tool estimate") and 0.5 < sim["probability"] < 1.0
