"""`simroute compare-models`' candidates and the held-out calls it measures, read from a store."""

from __future__ import annotations

import asyncio

import pytest
from kit.export import fill_store
from kit.launch import write_config

from records.export.options import SessionSplit
from records.store.sqlite.store import SQLiteStore
from router.config import load_config
from router.reports.compare_run import Candidate, candidate_config, held_out_sessions, parse_candidate, targets
from router.reports.held_out import HeldOut


def test_a_candidate_is_a_file_or_an_endpoint(tmp_path):
    model = tmp_path / "tuned.gguf"
    model.write_bytes(b"GGUF")
    assert parse_candidate(f"new={model}") == Candidate("new", str(model))
    assert parse_candidate(str(model)) == Candidate("tuned", str(model))
    served = parse_candidate("http://127.0.0.1:8080/v1")
    assert served == Candidate("127.0.0.1:8080", "http://127.0.0.1:8080/v1") and served.served
    assert parse_candidate("old=https://models.example/v1?x=1").name == "old"
    with pytest.raises(ValueError, match="no such GGUF file"):
        parse_candidate(f"x={tmp_path / 'missing.gguf'}")
    with pytest.raises(ValueError, match="no model in"):
        parse_candidate("x=")


def test_a_candidate_may_be_a_model_with_an_adapter(tmp_path):
    model, adapter = tmp_path / "base.gguf", tmp_path / "adapter.gguf"
    model.write_bytes(b"GGUF")
    adapter.write_bytes(b"GGUF")
    tuned = parse_candidate(f"tuned={model}+{adapter}")
    assert tuned == Candidate("tuned", str(model), str(adapter))
    assert tuned.describe() == {"name": "tuned", "model": str(model), "lora_path": str(adapter)}
    assert parse_candidate(f"{model}+{adapter}").name == "base"
    with pytest.raises(ValueError, match="no such GGUF adapter"):
        parse_candidate(f"x={model}+{tmp_path / 'missing.gguf'}")
    config = load_config(write_config(tmp_path))
    local = candidate_config(config, tuned, temperature=None).world_model
    assert (local.model_path, local.lora_path) == (str(model), str(adapter))
    # A plain file is the model alone: the configured adapter belongs to the configured model.
    assert candidate_config(config, Candidate("m", str(model)), temperature=None).world_model.lora_path is None


def test_a_candidate_runs_as_the_router_would_serve_it(tmp_path):
    config = load_config(write_config(tmp_path, world_model={"temperature": 0.7, "max_tokens": 99}))
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    local = candidate_config(config, Candidate("m", str(model)), temperature=0.0).world_model
    assert (local.engine, local.model_path, local.temperature, local.max_tokens) == ("llama", str(model), 0.0, 99)
    served = candidate_config(config, Candidate("s", "http://h:1/v1"), temperature=None).world_model
    assert (served.engine, served.url, served.temperature) == ("openai", "http://h:1/v1", 0.7)
    assert config.world_model.engine == "llama" and config.world_model.temperature == 0.7  # the config is not changed


def test_held_out_calls_have_a_real_answer_and_the_history_before_them(tmp_path):
    async def main():
        store = await SQLiteStore(tmp_path / "records.db").open()
        try:
            await fill_store(store, 40)  # 4 sessions of 10 calls; every 7th served simulated
            sessions = await held_out_sessions(store, HeldOut(split=SessionSplit(test_fraction=1.0)), max_sessions=2)
            assert sessions == ["s00000000", "s00000001"]
            named = await held_out_sessions(store, HeldOut(sessions=frozenset({"s00000003", "zz"})), max_sessions=None)
            assert named == ["s00000003", "zz"]
            found = await targets(store, ["s00000000"], max_calls=None)
            # Step 7 was served simulated, unshadowed.
            assert [t.record.step for t in found] == [
                0,
                1,
                2,
                3,
                4,
                5,
                6,
                8,
                9,
            ]
            for target in found:
                assert str(target.real.provenance) == "real"
                assert len(target.history) == target.record.step  # every earlier turn, as the agent saw it
            # The simulated answer the agent saw is history too.
            assert str(found[-1].history[7].observation.provenance) == "sim"
            assert len(await targets(store, ["s00000000", "s00000001"], max_calls=3)) == 3
        finally:
            await store.aclose()

    asyncio.run(main())


def test_the_floor_is_two_real_answers_to_the_same_call_from_different_sessions(tmp_path):
    from types import SimpleNamespace

    from calls import call_key
    from router.reports.compare_run import add_floors

    class Keys:
        def keys(self, call):
            key = call_key(call.channel, call.server, call.tool, call.arguments)
            return SimpleNamespace(replay=key, exact=key)

    async def main():
        store = await SQLiteStore(tmp_path / "records.db").open()
        try:
            await fill_store(store, 40)  # `alerts` (no arguments) in every session, answered differently each time
            found = await targets(store, ["s00000001"], max_calls=None)
            await add_floors(store, found, Keys())
            alerts = [t for t in found if t.record.call.tool == "alerts"]
            forecasts = [t for t in found if t.record.call.tool == "forecast"]
            assert alerts and all(t.floor is not None and 0 < t.floor <= 1 for t in alerts)
            assert forecasts and all(t.floor is None for t in forecasts)  # each city asked once: no other real answer
        finally:
            await store.aclose()

    asyncio.run(main())
