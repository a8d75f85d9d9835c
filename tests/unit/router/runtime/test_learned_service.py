"""The learned router's upkeep: reload while serving, a corrupt model file, statistics
refreshed from the store."""

from __future__ import annotations

import asyncio

import pytest
from kit.learned import generate, train_and_save

from calls import Call, Route, Session
from policies.learned import LearnedPolicy, LearnedSettings
from policies.safety.verdict import SafetyClass, SafetyVerdict
from records.store.sqlite.store import SQLiteStore
from router.runtime.learned_service import LearnedService

SAFE = SafetyVerdict(SafetyClass.SAFE, "reads")


def kit_key(call: Call) -> str:
    return f"{call.server}/{call.tool}/{sorted(call.arguments.items())}"


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """Two models trained once: as trained, and one whose thresholds nothing clears."""
    folder = tmp_path_factory.mktemp("models")
    rows = generate(400)
    train_and_save(folder / "a.skops", rows)
    train_and_save(folder / "never.skops", rows, thresholds={"sim": 1.01, "replay": 1.01})
    return {"a": (folder / "a.skops").read_bytes(), "never": (folder / "never.skops").read_bytes()}


async def service_over(tmp_path, rows, model: bytes | None) -> LearnedService:
    store = await SQLiteStore(tmp_path / "r.db").open()
    if rows:
        await store.upsert(rows)
    path = tmp_path / "router.skops"
    if model is not None:
        path.write_bytes(model)
    policy = LearnedPolicy(
        LearnedSettings(min_labels=1, explore_rate=0.0, replay_min_sessions=0), replay_key_of=kit_key
    )  # the model decides
    service = LearnedService(
        policy, store, model_path=path, max_divergence=0.2, prior_strength=4.0, watch_s=0.05, refresh_s=0.05
    )
    await service.start()
    return service


def replace_file(path, data: bytes) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)


async def test_reload_while_serving(tmp_path, models):
    service = await service_over(tmp_path, generate(400), models["a"])
    watcher = asyncio.create_task(service.watch())
    seen: list[tuple[int, Route, str]] = []
    stop = asyncio.Event()

    async def agent():
        step = 0
        while not stop.is_set():
            step += 1
            decision = service.policy.decide(Call("mcp", "srv", "get_motto", {}, "a"), Session("a", steps=step), SAFE)
            seen.append((service.loads, decision.route, decision.reason))
            await asyncio.sleep(0.001)

    calls = asyncio.create_task(agent())
    await asyncio.sleep(0.3)
    replace_file(service.model_path, models["never"])
    for _ in range(200):
        if service.loads == 2:
            break
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.2)
    stop.set()
    await calls
    watcher.cancel()
    before = [route for loads, route, _ in seen if loads == 1]
    after = [(route, reason) for loads, route, reason in seen if loads == 2]
    assert service.loads == 2 and before and after  # calls kept flowing through the reload
    assert set(before) == {Route.REPLAY}
    assert {route for route, _ in after} == {Route.REAL} and all("< 1.010" in reason for _, reason in after)
    await service.store.aclose()


async def test_a_corrupt_model_file_keeps_the_old_model_with_a_clear_error(tmp_path, models):
    service = await service_over(tmp_path, generate(400), models["a"])
    good = service.policy.model
    assert good is not None and service.loads == 1
    watcher = asyncio.create_task(service.watch())
    replace_file(service.model_path, b"PK\x03\x04 this is not a model")
    for _ in range(200):
        if service.last_error:
            break
        await asyncio.sleep(0.05)
    watcher.cancel()
    assert "is not a readable skops file" in service.last_error and str(service.model_path) in service.last_error
    assert f"keeping model {good.digest}" in service.last_error
    assert service.policy.model is good
    decided = service.policy.decide(Call("mcp", "srv", "get_motto", {}, "a"), Session("a", steps=1), SAFE)
    assert f"model {good.digest}" in decided.reason
    # A file of the wrong kind is refused too, and a good one after it loads.
    await service.published.publish(service.model_path, b"", "")  # one router's `simroute reload`: touched
    replace_file(service.model_path, models["never"])
    assert await service.load_file() and service.policy.model is not good and service.last_error is None
    await service.store.aclose()


async def test_statistics_refresh_from_new_records(tmp_path):
    service = await service_over(tmp_path, [], None)
    assert service.policy.model is None and service.policy.state.labels == 0
    rows = generate(200)
    pending = dict(rows[-1], status="pending")
    await service.store.upsert(rows[:-1] + [pending])
    assert await service.refresh() == 199
    labels = service.policy.state.labels
    assert labels > 199 and "srv/get_motto/[]" in service.policy.state.recorded_keys
    # The pending record completes later: its labels still arrive.
    await service.store.upsert([rows[-1]])
    assert await service.refresh() == 1 and service.policy.state.labels > labels
    await service.store.aclose()
