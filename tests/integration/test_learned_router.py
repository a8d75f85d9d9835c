"""The learned router end to end: `simroute mcp` with the bundled GGUF world model in
front of the toolbox server, whose `get_motto` always answers the same and whose
`get_visits` counts. Shadowed calls fill the store, `simroute train` learns from
them, and `mode: learned` then sends the constant tool off the real side and keeps
the counter real, as `simroute explain` and the session's records show."""

from __future__ import annotations

import json
import subprocess

import pytest

from kit import meta_of, records_of, simroute_executable, stdio_client, toolbox_server, write_config

pytestmark = pytest.mark.integration

WORLD_MODEL = {"max_tokens": 32, "deadline_s": 120}
ROUNDS = 5  # shadowed calls of each tool


def run(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([simroute_executable(), *args], capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="session")
async def learned(tmp_path_factory):
    """One store of real shadow records, one trained model, one learned session."""
    folder = tmp_path_factory.mktemp("learned")
    sections = {"mcpServers": {"toolbox": toolbox_server()}, "world_model": WORLD_MODEL, "learned": {"min_labels": 3, "explore_rate": 0}}
    # The counter's changing value is state, not noise: the passive noise model must not
    # mask it (it counts up between real answers), or its sim labels would look acceptable.
    shadow = {"stop_grace_s": 0, "drain_on_start": False}
    shadowing = write_config(folder, mode="shadow", shadow=shadow, **sections)
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
        tool: json.loads(run("explain", "--config", str(learning), "--call", json.dumps({"server": "toolbox", "name": tool})).stdout)
        for tool in ("get_motto", "get_visits")
    }
    return {"folder": folder, "config": learning, "train": trained.stdout, "served": served, "explained": explained, "records": records_of(learning)}


async def test_shadow_records_train_a_model(learned):
    shadowed = [r for r in learned["records"] if r["route"] == "shadow"]
    assert len(shadowed) == 2 * ROUNDS and all(r["status"] == "complete" and r["divergence"] is not None for r in shadowed)
    assert "replay: 8 labels (4 acceptable)" in learned["train"] and "saved" in learned["train"]
    card = json.loads((learned["folder"] / ".simroute" / "router.card.json").read_text())
    assert card["routes"]["replay"]["trained"] and card["data"]["records"] == 2 * ROUNDS


async def test_learned_mode_replays_the_constant_tool_and_keeps_the_counter_real(learned):
    motto, visits = learned["served"]["get_motto"], learned["served"]["get_visits"]
    assert meta_of(motto)["policy"] == "learned" and meta_of(motto)["route"] in ("replay", "sim")
    assert motto.content[0].text == "Festina lente: make haste slowly."
    assert meta_of(visits)["policy"] == "learned" and meta_of(visits)["route"] == "real" and meta_of(visits)["provenance"] == "real"
    session = [r for r in learned["records"] if r["policy"] == "learned"]
    assert [(r["tool"], r["route"]) for r in session] == [("get_motto", meta_of(motto)["route"]), ("get_visits", "real")]
    assert all("P(ok)=" in r["reason"] for r in session)


async def test_explain_shows_the_probabilities_behind_it(learned):
    motto, visits = learned["explained"]["get_motto"], learned["explained"]["get_visits"]
    assert motto["policy"] == "learned" and motto["route"] in ("replay", "sim") and visits["route"] == "real"
    replay = {c["route"]: c for c in motto["learned"]["candidates"]}["replay"]
    counter = {c["route"]: c for c in visits["learned"]["candidates"]}["replay"]
    assert replay["eligible"] and replay["source"].startswith("model")
    assert not counter["eligible"] and counter["probability"] < replay["probability"]
