"""The noise model learning from repeated real calls of the reference time server
(`mcp-server-time` from PyPI, behind `simroute mcp` over stdio): the instant in its
answers is noise, its UTC offset is not."""

from __future__ import annotations

import asyncio
import json
import subprocess

import pytest

from kit import records_of, simroute_executable, stdio_client, time_server
from router.types import Observation, Provenance
from shadow.divergence import compare
from shadow.noise import NoiseModel, NoiseRule

pytestmark = pytest.mark.integration

TOKYO = {"timezone": "Asia/Tokyo"}


def simulated(datetime_text: str) -> Observation:
    body = {"timezone": "Asia/Tokyo", "datetime": datetime_text, "day_of_week": "Monday", "is_dst": False}
    return Observation([{"type": "text", "text": json.dumps(body, indent=2)}], Provenance.SIM, structured=body)


async def test_noise_learned_from_real_time_server_calls_masks_the_instant_not_the_offset(make_config):
    config = make_config(mcpServers={"time": time_server()})
    async with stdio_client(config) as client:
        for _ in range(4):  # 3 real-vs-real pairs; the server's answers change every second
            await client.call_tool("get_current_time", TOKYO)
            await asyncio.sleep(1.05)
    rows = records_of(config)
    assert len(rows) == 4 and len({row["call_key"] for row in rows}) == 1

    # Learning alone, without the built-in detectors: the instant is what differed in every pair.
    model = NoiseModel(rule=NoiseRule(builtin_detectors=False)).learn_from_records(rows)
    noisy = {(row.path, row.noisy) for row in model.table()}
    assert noisy == {("$.result.datetime#instant", True)}, model.table()
    tool = next(iter(model.stats))
    noise = model.noise_for(tool)

    real = Observation.from_json(rows[-1]["observation"])
    date = real.structured["datetime"][:10]
    right_offset = compare(real, simulated(f"{date}T23:59:59+09:00"), channel="mcp", noise=noise)
    assert (right_offset.score, right_offset.kind) == (0.0, "none")
    assert right_offset.evidence["masked"] == ["$.result.datetime#instant"]

    wrong_offset = compare(real, simulated(f"{date}T23:59:59+08:00"), channel="mcp", noise=noise)
    assert wrong_offset.kind == "content" and wrong_offset.score > 0
    assert [item["path"] for item in wrong_offset.evidence["divergent"]] == ["$.result.datetime#offset"]

    # `simroute noise` shows the same table, from the store.
    out = subprocess.run([simroute_executable(), "noise", "--config", str(config), "--json"], capture_output=True, text=True, check=True)
    table = [json.loads(line) for line in out.stdout.splitlines()]
    assert table == [{"tool": "time.get_current_time", "path": "$.result.datetime#instant", "disagreements": 3, "pairs": 3, "lower_bound": 0.75, "noisy": True}]
