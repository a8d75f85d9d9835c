"""The noise model learning from real servers behind `simroute mcp` over stdio: the
reference time server (`mcp-server-time` from PyPI), whose instant is noise and
whose UTC offset is not; and stateful servers, whose changing values are state the
world model must get right, never noise."""

from __future__ import annotations

import asyncio
import json
import subprocess
import time

import pytest
from kit.launch import notes_server, records_of, simroute_executable, stdio_client, time_server, toolbox_server

from calls import Observation, Provenance
from records.store.sqlite.store import SQLiteStore
from shadow.compare.divergence import Noise, compare

pytestmark = pytest.mark.integration

TOKYO = {"timezone": "Asia/Tokyo"}


def simulated(datetime_text: str, day_of_week: str) -> Observation:
    body = {"timezone": "Asia/Tokyo", "datetime": datetime_text, "day_of_week": day_of_week, "is_dst": False}
    return Observation([{"type": "text", "text": json.dumps(body, indent=2)}], Provenance.SIM, structured=body)


def noise_table(config) -> list[dict]:
    out = subprocess.run(
        [simroute_executable(), "noise", "--config", str(config), "--json"], capture_output=True, text=True, check=True
    )
    return [json.loads(line) for line in out.stdout.splitlines()]


async def stored_pairs(config) -> dict[str, int]:
    """Real-vs-real pairs learned per tool ("server.tool"), read from the store."""
    store = await SQLiteStore(config.parent / "records.db", read_only=True).open()
    try:
        return {name: stats.pairs for _, name, stats in await store.noise_table()}
    finally:
        await store.aclose()


def learned_noise(table: list[dict], tool: str) -> Noise:
    """The learned mask of one tool alone (built-in detectors off)."""
    return Noise(builtin=False, paths=frozenset(row["path"] for row in table if row["tool"] == tool and row["noisy"]))


def check_instant_masked_offset_not(real: Observation, noise: Noise) -> None:
    # The same day as the real answer (in Tokyo): only the instant and the offset differ.
    date, day = real.structured["datetime"][:10], real.structured["day_of_week"]
    right_offset = compare(real, simulated(f"{date}T23:59:59+09:00", day), channel="mcp", noise=noise)
    assert (right_offset.score, right_offset.kind) == (0.0, "none")
    assert right_offset.evidence["masked"] == ["$.result.datetime#instant"]
    wrong_offset = compare(real, simulated(f"{date}T23:59:59+08:00", day), channel="mcp", noise=noise)
    assert wrong_offset.kind == "content" and wrong_offset.score > 0
    assert [item["path"] for item in wrong_offset.evidence["divergent"]] == ["$.result.datetime#offset"]


async def test_noise_learned_from_real_time_server_calls_masks_the_instant_not_the_offset(make_config):
    config = make_config(mcpServers={"time": time_server()})
    async with stdio_client(config) as client:
        for _ in range(4):  # 3 real-vs-real pairs; the server's answers change every second
            await client.call_tool("get_current_time", TOKYO)
            await asyncio.sleep(1.05)
    rows = records_of(config)
    assert len(rows) == 4 and len({row["call_key"] for row in rows}) == 1

    # `simroute noise` shows the table the router learned into the store: the instant
    # is what differed in every pair.
    table = noise_table(config)
    assert table == [
        {
            "tool": "time.get_current_time",
            "path": "$.result.datetime#instant",
            "disagreements": 3,
            "pairs": 3,
            "lower_bound": 0.75,
            "noisy": True,
        }
    ]
    check_instant_masked_offset_not(
        Observation.from_json(rows[-1]["observation"]), learned_noise(table, "time.get_current_time")
    )


async def test_stateful_values_are_not_learned_as_noise(make_config):
    """Four rounds of: the time (read-only), a counter read (`get_visits`: named like a
    read, classed safe, but it counts), the notes list (read-only) and a new note (a
    write to the notes server). Only the time's instant is learned as noise: the
    counter counts up (state), and every pair of lists has a write in between."""
    config = make_config(mcpServers={"time": time_server(), "toolbox": toolbox_server(), "notes": notes_server()})
    async with stdio_client(config) as client:
        for _ in range(4):
            await client.call_tool("time_get_current_time", TOKYO)  # several servers: tool names are prefixed
            await client.call_tool("toolbox_get_visits", {})
            await client.call_tool("notes_list_notes", {})
            await client.call_tool("notes_create_note", {"title": "groceries", "body": "eggs"})
            await asyncio.sleep(1.05)
    rows = records_of(config)
    assert [row["observation"]["content"][0]["text"] for row in rows if row["tool"] == "get_visits"] == [
        f"visit number {n}" for n in range(1, 5)
    ]
    assert {row["tool"]: row["safety_class"] for row in rows}["get_visits"] == "safe"

    table = noise_table(config)
    assert [(row["tool"], row["path"], row["noisy"]) for row in table] == [
        ("time.get_current_time", "$.result.datetime#instant", True)
    ]
    pairs = await stored_pairs(config)
    assert (
        pairs["time.get_current_time"] == 3 and pairs["toolbox.get_visits"] == 3
    )  # compared, and nothing in them was noise
    assert (
        "notes.list_notes" not in pairs and "notes.create_note" not in pairs
    )  # never evidence: a write came between / it writes

    # A simulation that gets the counter wrong still diverges; the time's instant is masked.
    visits = next(Observation.from_json(row["observation"]) for row in reversed(rows) if row["tool"] == "get_visits")
    wrong = Observation(
        [{"type": "text", "text": "visit number 9"}], Provenance.SIM, structured={"result": "visit number 9"}
    )
    result = compare(visits, wrong, channel="mcp", noise=learned_noise(table, "toolbox.get_visits"))
    assert result.kind == "content" and result.score > 0 and result.evidence["masked"] == []
    time_row = next(row for row in reversed(rows) if row["tool"] == "get_current_time")
    check_instant_masked_offset_not(
        Observation.from_json(time_row["observation"]), learned_noise(table, "time.get_current_time")
    )


async def test_noise_probes_teach_the_table_without_repeated_agent_calls(make_config):
    """`shadow.noise_probe_rate: 1`: every call of the read-only time tool is made once
    more off the agent's path; three calls with different arguments (no passive pair)
    teach the table the instant."""
    config = make_config(
        mcpServers={"time": time_server()}, shadow={"noise_probe_rate": 1.0, "noise_probe_delay_s": 1.05}
    )
    async with stdio_client(config) as client:
        for zone in ("Asia/Tokyo", "Europe/Paris", "America/New_York"):
            await client.call_tool("get_current_time", {"timezone": zone})
        await asyncio.sleep(2.0)  # the last probe answers before the client hangs up
    rows = records_of(config)
    assert (
        len(rows) == 3 and len({row["call_key"] for row in rows}) == 3
    )  # the agent's calls only: probes are not records
    assert noise_table(config) == [
        {
            "tool": "time.get_current_time",
            "path": "$.result.datetime#instant",
            "disagreements": 3,
            "pairs": 3,
            "lower_bound": 0.75,
            "noisy": True,
        }
    ]


async def test_metrics_count_what_the_noise_learner_did(make_config, tmp_path):
    """/metrics of `simroute serve`: each probe answered and each pair learned is counted."""
    import httpx2 as httpx
    from fastmcp import Client
    from fastmcp.client.transports import StreamableHttpTransport
    from kit.serve import parsed, serving

    config = make_config(
        mcpServers={"time": time_server()}, shadow={"noise_probe_rate": 1.0, "noise_probe_delay_s": 1.05}
    )
    with serving(config, tmp_path / "serve.log") as port:
        async with Client(StreamableHttpTransport(f"http://127.0.0.1:{port}/mcp")) as client:
            for zone in ("Asia/Tokyo", "Europe/Paris"):
                await client.call_tool("get_current_time", {"timezone": zone})
        samples: dict = {}
        async with httpx.AsyncClient(timeout=10) as http:
            # Probes answer about a second after their call; a loaded machine may take longer.
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                samples = parsed((await http.get(f"http://127.0.0.1:{port}/metrics")).text)
                if samples.get(("simroute_noise_pairs_total", (("outcome", "learned"),))) == 2:
                    break
                await asyncio.sleep(0.1)
    assert samples[("simroute_noise_probes_total", (("outcome", "answered"),))] == 2
    assert samples[("simroute_noise_pairs_total", (("outcome", "learned"),))] == 2
    assert samples[("simroute_noise_probes_total", (("outcome", "failed"),))] == 0
