"""One real learned-router run, shared by the tests that need it (the `learned`
session fixture of tests/conftest.py): `simroute mcp` with the bundled GGUF world
model in front of the toolbox server shadows `get_motto` (always the same answer)
and `get_visits` (a counter) in three sessions, `simroute drain` completes the
shadow work, `simroute train` learns from the records, and a `mode: learned`
session follows."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from kit.launch import records_of, simroute_executable, stdio_client, toolbox_server, write_config

WORLD_MODEL = {"max_tokens": 32, "deadline_s": 120}
SESSIONS = 3  # shadowing sessions (each a `simroute mcp` process)
ROUNDS = 2  # shadowed calls of each tool per session


def run(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([simroute_executable(), *args], capture_output=True, text=True, timeout=timeout)


async def learned_run(folder: Path) -> dict[str, Any]:
    """One store of real shadow records, one trained model, one learned session."""
    # The counter is a service's: it counts on across the sessions' server processes.
    sections = {
        "mcpServers": {"toolbox": toolbox_server(TOOLBOX_VISITS=str(folder / "visits"))},
        "world_model": WORLD_MODEL,
        "learned": {"min_labels": 3, "explore_rate": 0},
    }
    # The counter's changing value is state, not noise: the passive noise model must not
    # mask it (it counts up between real answers), or its sim labels would look acceptable.
    shadow = {"stop_grace_s": 0, "drain_on_start": False}
    shadowing = write_config(folder, mode="shadow", shadow=shadow, **sections)
    for _ in range(SESSIONS):
        async with stdio_client(shadowing) as client:
            for _ in range(ROUNDS):
                await client.call_tool("get_motto", {})
                await client.call_tool("get_visits", {})
    drained = run("drain", "--config", str(shadowing), timeout=1200)
    assert drained.returncode == 0, drained.stderr
    trained = run("train", "--config", str(shadowing))
    assert trained.returncode == 0, trained.stdout + trained.stderr
    learning = write_config(folder, mode="learned", **sections)
    async with stdio_client(learning) as client:
        served = {tool: await client.call_tool(tool, {}) for tool in ("get_motto", "get_visits")}
    explained = {
        tool: json.loads(
            run("explain", "--config", str(learning), "--call", json.dumps({"server": "toolbox", "name": tool})).stdout
        )
        for tool in ("get_motto", "get_visits")
    }
    return {
        "folder": folder,
        "config": learning,
        "train": trained.stdout,
        "served": served,
        "explained": explained,
        "records": records_of(learning),
    }
