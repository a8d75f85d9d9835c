"""`simroute compare-models --judge`: each simulated call of a candidate is also
scored by a judge model (`simroute judge`'s prompt and verdict), and the table gets a
judge column. The candidate and the judge are OpenAI-compatible stubs; the store is
filled by real runs of the test toolbox."""

from __future__ import annotations

import asyncio
import json
import subprocess

import pytest
from kit.judge import judge_stub
from kit.launch import meta_of, records_of, simroute_executable, stdio_client, toolbox_server, write_config
from kit.model_stub import ModelStub

pytestmark = pytest.mark.integration

SESSIONS = [
    [("add_funds", {"amount": 5}), ("get_balance", {})],
    [("add_funds", {"amount": 7}), ("get_balance", {})],
]


async def run_session(config, calls) -> None:
    async with stdio_client(config) as client:
        for tool, arguments in calls:
            result = await client.call_tool(tool, arguments, raise_on_error=False)
            assert meta_of(result)["provenance"] == "real" and not result.is_error


def test_a_judge_scores_every_well_formed_simulated_call(tmp_path):
    config = write_config(tmp_path, mcpServers={"toolbox": toolbox_server(TOOLBOX_BALANCE=str(tmp_path / "balance"))})
    for calls in SESSIONS:
        asyncio.run(run_session(config, calls))
    held_out = list(dict.fromkeys(row["session"] for row in records_of(config)))[1]
    with ModelStub("balance 12") as candidate, judge_stub() as judge:
        command = [simroute_executable(), "compare-models", "--config", str(config), "--session", held_out]
        command += ["--model", f"stub={candidate.url}", "--judge", judge.url, "--temperature", "0"]
        done = subprocess.run([*command, "--json"], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        document = json.loads(done.stdout)
        table = subprocess.run(command, capture_output=True, text=True, timeout=300)
        judged_requests = len(judge.bodies)
    calls = document["calls"]
    assert len(calls) == 2 and all(call["well_formed"] for call in calls), calls
    # Every simulated call got a verdict on AgentWorldBench's 0–100 scale, from the judge.
    assert all(call["judge_score"] is not None and 0 <= call["judge_score"] <= 100 for call in calls), calls
    assert judged_requests >= 4  # two calls, in each of the two runs
    total = next(row for row in document["rows"] if row["domain"] == "all")
    assert total["judged"] == 2 and total["judge_score"] is not None
    assert table.returncode == 0 and "judge" in table.stdout.splitlines()[1], table.stdout
