"""The sim and shadow routes end to end: `simroute mcp` in front of
mcp-server-time, with the real SmolLM2 GGUF as the world model."""

from __future__ import annotations

import json
import subprocess
import time

import pytest
from kit.launch import meta_of, records_of, simroute_executable, stdio_client, time_server

# The bundled GGUF model runs in these tests, against deadlines: one test at a time (`serial`).
pytestmark = [pytest.mark.integration, pytest.mark.serial]

# Small budgets keep the suite fast; the model is real.
WORLD_MODEL = {"max_tokens": 96, "deadline_s": 120}


async def test_simulated_call_answers_in_the_real_format(make_config):
    config = make_config(
        mcpServers={"time": time_server()},
        world_model=WORLD_MODEL,
        rules=[{"match": {"arguments": {"timezone": "Europe/*"}}, "route": "sim"}],
    )
    async with stdio_client(config) as client:
        real = await client.call_tool("get_current_time", {"timezone": "Asia/Tokyo"})
        simulated = await client.call_tool("get_current_time", {"timezone": "Europe/Paris"})
    assert meta_of(real)["provenance"] == "real" and meta_of(simulated)["provenance"] == "sim"
    assert not simulated.is_error
    # Schema-valid structured content, with the real answer's keys.
    assert set(simulated.structured_content) == set(real.structured_content)
    assert json.loads(simulated.content[0].text) == simulated.structured_content
    record = records_of(config)[-1]
    assert record["provenance"] == "sim" and record["observation"]["structured"] == simulated.structured_content


async def test_shadow_record_completed_by_drain_after_disconnect(make_config):
    # No grace at stop and no drain on start: the shadow side is still pending when
    # the client hangs up, and `simroute drain` finishes it.
    config = make_config(
        mcpServers={"time": time_server()},
        mode="shadow",
        world_model=WORLD_MODEL,
        shadow={"drain_on_start": False, "stop_grace_s": 0},
    )
    async with stdio_client(config) as client:
        served = await client.call_tool("get_current_time", {"timezone": "Asia/Tokyo"})
    assert meta_of(served)["provenance"] == "real" and meta_of(served)["route"] == "shadow"

    [pending] = records_of(config)
    assert pending["status"] == "pending" and pending["shadow"] is None  # never silently one-sided
    out = subprocess.run(
        [simroute_executable(), "drain", "--config", str(config)], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    [record] = records_of(config)
    assert record["status"] == "complete"
    assert record["observation"]["provenance"] == "real" and record["shadow"]["provenance"] == "sim"
    assert 0.0 <= record["divergence"] <= 1.0
    # A kind and the evidence behind it: divergent paths with both sides, masked noise.
    assert record["divergence_kind"] in ("status", "structure", "format", "content", "none")
    evidence = record["divergence_evidence"]
    assert set(evidence) == {"divergent", "masked", "note"}
    assert (record["divergence_kind"] == "none") == (not evidence["divergent"])


async def test_world_model_deadline_stops_generation_and_frees_the_model(make_config):
    config = make_config(
        mcpServers={"slow": {**time_server(), "sim_timeout": 0.05}, "time": time_server()},
        mode="sim",
        world_model=WORLD_MODEL,
    )
    async with stdio_client(config) as client:
        await client.call_tool("time_get_current_time", {"timezone": "UTC"})  # model loaded, context warm
        started = time.monotonic()
        late = await client.call_tool("slow_get_current_time", {"timezone": "Asia/Tokyo"}, raise_on_error=False)
        elapsed = time.monotonic() - started
        after = await client.call_tool("time_get_current_time", {"timezone": "Asia/Tokyo"}, raise_on_error=False)
    assert late.is_error and "deadline" in late.content[0].text and meta_of(late)["provenance"] == "sim"
    assert elapsed < 0.05 + 1.0
    assert not after.is_error and meta_of(after)["provenance"] == "sim"
