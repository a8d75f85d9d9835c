"""Shell calls routed between the real sandbox and the Terminal world model (the
real SmolLM2 GGUF): mixed rules, stickiness, shadow, and no Docker at all."""

from __future__ import annotations

import os
import subprocess

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from kit.launch import meta_of, records_of, simroute_executable, stdio_client

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("no_sandbox_left_behind")]

WORLD_MODEL = {"max_tokens": 64, "deadline_s": 120}
READ_ONLY = {
    "name": "read-only",
    "match": {"channel": "shell", "arguments": {"command": r"re:^(ls|cat|pwd|git status)\b"}},
    "route": "sim",
}
SHAPE = {"output", "exit_code", "cwd", "timed_out", "truncated"}


async def run(client, command):
    result = await client.call_tool("shell_exec", {"command": command}, raise_on_error=False)
    return result, meta_of(result)


async def test_read_only_commands_simulated_others_real_and_the_session_stays_real(make_config):
    config = make_config(shell={"pool_size": 0}, world_model=WORLD_MODEL, rules=[READ_ONLY])
    async with stdio_client(config) as client:
        written, w = await run(client, "echo hello > notes.txt")
        read, r = await run(client, "cat notes.txt")
        removed, d = await run(client, "rm notes.txt && ls -a | wc -l")
    assert (w["provenance"], w["policy"]) == ("real", "mode")
    assert (r["provenance"], r["policy"]) == ("sim", "rules:read-only")
    assert (d["provenance"], d["policy"]) == ("real", "sticky")  # the rule did not move the session off its sandbox
    # The simulated answer has the real backend's shape (exit code unknown unless the model showed one).
    assert SHAPE <= set(read.structured_content) and not read.is_error
    assert read.structured_content["exit_code"] in (None, *range(256))
    assert removed.structured_content["output"].strip() == "2"  # the real sandbox saw only real commands
    rows = records_of(config)
    assert [row["provenance"] for row in rows] == ["real", "sim", "real"]
    assert rows[1]["channel"] == "shell" and rows[1]["observation"]["structured"] == read.structured_content


async def test_shadowed_commands_are_compared_with_the_terminal_model(make_config):
    config = make_config(
        shell={"pool_size": 0},
        world_model=WORLD_MODEL,
        mode="shadow",
        shadow={"drain_on_start": False, "stop_grace_s": 0},
    )
    async with stdio_client(config) as client:
        # A program the world state does not run (`pwd` it answers itself): the shadow side is the model's.
        result, meta = await run(client, "readlink -f .")
    assert meta["provenance"] == "real" and result.structured_content["output"].strip() == "/workspace"
    assert records_of(config)[-1]["status"] == "pending"  # the stop left the shadow side to drain
    subprocess.run(
        [simroute_executable(), "drain", "--config", str(config)], check=True, capture_output=True, timeout=300
    )
    row = records_of(config)[-1]
    assert row["status"] == "complete" and row["shadow"]["provenance"] == "sim"
    assert SHAPE <= set(row["shadow"]["structured"]) and row["divergence"] is not None


async def test_without_docker_simulated_shells_work_and_real_ones_say_why(make_config):
    config = make_config(
        shell={"pool_size": 1},
        world_model=WORLD_MODEL,
        mode="sim",
        rules=[{"match": {"channel": "shell", "arguments": {"command": "re:^touch"}}, "route": "real"}],
    )
    env = {**os.environ, "DOCKER_HOST": "unix:///nonexistent/docker.sock"}
    transport = StdioTransport(simroute_executable(), ["mcp", "--config", str(config)], env=env, keep_alive=False)
    async with Client(transport) as client:
        simulated, s = await run(client, "ls -la")
        real, r = await run(client, "touch file")
    assert s["provenance"] == "sim" and not simulated.is_error and SHAPE <= set(simulated.structured_content)
    assert r["provenance"] == "none" and real.is_error
    assert "Docker" in real.content[0].text and "nonexistent" in real.content[0].text
