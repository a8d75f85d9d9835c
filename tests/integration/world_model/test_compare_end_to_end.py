"""`simroute compare-models --end-to-end` as a user runs it: held-out calls answered as
the sim route answers them with the world-state layer on, against the model alone, on
a store filled by real runs (the test toolbox's `echo`, real shell sandboxes in Docker)
and the bundled GGUF. A training session writes and reads a file and echoes a phrase;
the held-out session does the same with other values."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from kit.launch import meta_of, model_path, records_of, simroute_executable, stdio_client, toolbox_server

pytestmark = [pytest.mark.integration, pytest.mark.serial, pytest.mark.usefixtures("no_sandbox_left_behind")]

TRAINING = ("pear tree", "pear")
HELD_OUT = ("apple tree", "apple")


async def session(config, phrase: str, fruit: str) -> None:
    async with stdio_client(config) as client:
        for tool, arguments in [
            ("echo", {"text": phrase}),
            ("shell_exec", {"command": f"echo {fruit} > fruit.txt"}),
            ("shell_exec", {"command": "cat fruit.txt"}),
        ]:
            result = await client.call_tool(tool, arguments, raise_on_error=False)
            assert meta_of(result)["provenance"] == "real" and not result.is_error, result


def compare(config, held_out: str, *extra: str) -> dict:
    done = subprocess.run(
        [simroute_executable(), "compare-models", "--config", str(config), "--session", held_out]
        + ["--model", f"base={model_path()}", "--temperature", "0", "--json", *extra],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


async def test_end_to_end_answers_from_the_state_and_aligned_training_sessions(make_config):
    config = make_config(
        mcpServers={"toolbox": toolbox_server()},
        shell={"pool_size": 0},
        world_model={"model_path": str(model_path()), "max_tokens": 32, "deadline_s": 180},
    )
    await session(config, *TRAINING)
    await session(config, *HELD_OUT)
    held_out = records_of(config)[-1]["session"]

    alone, end_to_end = compare(config, held_out), compare(config, held_out, "--end-to-end")

    assert (alone["end_to_end"], end_to_end["end_to_end"]) == (False, True)
    assert alone["held_out"]["calls"] == end_to_end["held_out"]["calls"] == 3
    by_step = {call["step"]: call for call in end_to_end["calls"]}
    echo, write, read = (by_step[step] for step in sorted(by_step))
    # The echo, from the training session's recording with this session's phrase written in.
    assert (echo["tool"], echo["answered_by"], echo["divergence"]) == ("echo", "replay-aligned", 0.0)
    assert echo["simulated"] == "apple tree"
    # The file written, then read back from the state: what the real sandbox answered.
    assert [write["answered_by"], read["answered_by"]] == ["state", "state"]
    assert read["simulated"].splitlines()[0] == "apple" and read["divergence"] == 0.0
    # None of it asked the model; the model alone was asked every call.
    assert all(call["prompt_tokens"] == 0 and call["well_formed"] for call in end_to_end["calls"])
    assert {call["answered_by"] for call in alone["calls"]} == {"model"}
    assert all(call["prompt_tokens"] > 0 for call in alone["calls"])
    fidelity = {
        name: 1 - sum(call["divergence"] for call in doc["calls"]) / len(doc["calls"])
        for name, doc in (("alone", alone), ("end_to_end", end_to_end))
    }
    assert fidelity["end_to_end"] == 1.0 and fidelity["end_to_end"] >= fidelity["alone"]


def test_end_to_end_needs_the_world_state_layer(make_config):
    config = make_config(world_state={"enabled": False})
    done = subprocess.run(
        [simroute_executable(), "compare-models", "--config", str(config), "--session", "s"]
        + ["--model", f"base={model_path()}", "--end-to-end"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "300"},  # the error on one line
    )
    assert done.returncode == 2 and "world_state.enabled is false" in done.stderr
