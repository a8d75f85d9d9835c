"""`simroute mcp` over stdio, launched as a subprocess, in front of real MCP servers."""

from __future__ import annotations

import pytest
from kit.launch import meta_of, records_of, stdio_client, time_server, toolbox_server

pytestmark = pytest.mark.integration

TOKYO = {"timezone": "Asia/Tokyo"}


async def test_lists_upstream_tools_unchanged_with_schemas(make_config):
    config = make_config(mcpServers={"time": time_server()})
    async with stdio_client(config) as client:
        tools = {t.name: t for t in await client.list_tools()}
    assert set(tools) == {"get_current_time", "convert_time"}
    schema = tools["get_current_time"].input_schema
    assert schema["required"] == ["timezone"]
    assert tools["get_current_time"].output_schema is not None
    assert tools["get_current_time"].annotations is not None
    assert tools["get_current_time"].annotations.read_only_hint is True


async def test_real_call_carries_provenance_meta_and_is_recorded(make_config, tmp_path):
    config = make_config(mcpServers={"time": time_server()})
    async with stdio_client(config) as client:
        result = await client.call_tool("get_current_time", TOKYO)
    assert result.structured_content["timezone"] == "Asia/Tokyo"
    meta = meta_of(result)
    assert meta["provenance"] == "real" and meta["route"] == "real" and meta["policy"] == "mode"
    assert meta["record_id"]

    rows = records_of(config)
    assert [r["id"] for r in rows] == [meta["record_id"]]
    row = rows[0]
    assert row["tool"] == "get_current_time" and row["arguments"] == TOKYO
    assert row["observation"]["structured"] == result.structured_content
    assert row["latency_ms"] > 0 and row["step"] == 0


async def test_replay_hits_then_exhausts_then_follows_on_miss(make_config):
    servers = {"time": time_server()}
    recording = make_config(mcpServers=servers)
    async with stdio_client(recording) as client:
        originals = [await client.call_tool("get_current_time", TOKYO) for _ in range(2)]

    replaying = make_config(mcpServers=servers, mode="replay", replay={"on_miss": "error"})
    async with stdio_client(replaying) as client:
        first = await client.call_tool("get_current_time", TOKYO)
        second = await client.call_tool("get_current_time", TOKYO)
        exhausted = await client.call_tool("get_current_time", TOKYO, raise_on_error=False)
        never_seen = await client.call_tool("get_current_time", {"timezone": "Europe/Oslo"}, raise_on_error=False)

    for replayed, original in zip([first, second], originals, strict=False):
        assert meta_of(replayed)["provenance"] == "replay"
        assert replayed.structured_content == original.structured_content
    assert exhausted.is_error and meta_of(exhausted)["route"] == "replay"
    assert "replay miss (occurrence 3" in exhausted.content[0].text
    assert never_seen.is_error and "replay miss (occurrence 1" in never_seen.content[0].text

    # on_miss: real serves the miss from the real server and says so.
    falling_back = make_config(mcpServers=servers, mode="replay", replay={"on_miss": "real"})
    async with stdio_client(falling_back) as client:
        await client.call_tool("get_current_time", TOKYO)
        await client.call_tool("get_current_time", TOKYO)
        third = await client.call_tool("get_current_time", TOKYO)
    meta = meta_of(third)
    assert meta["route"] == "replay" and meta["provenance"] == "real"
    assert "served real" in meta["note"]


async def test_replay_ignores_configured_argument_paths(make_config):
    servers = {"toolbox": toolbox_server()}
    async with stdio_client(make_config(mcpServers=servers)) as client:
        original = await client.call_tool("echo", {"text": "first"})
    config = make_config(mcpServers=servers, mode="replay", replay={"on_miss": "error", "ignore_arguments": ["text"]})
    async with stdio_client(config) as client:
        replayed = await client.call_tool("echo", {"text": "different"})
    assert meta_of(replayed)["provenance"] == "replay"
    assert replayed.content[0].text == original.content[0].text == "first"


async def test_rules_route_by_tool_and_argument_patterns(make_config):
    config = make_config(
        mcpServers={"time": time_server()},
        rules=[
            {
                "name": "no-asia",
                "match": {"tool": "get_*", "arguments": {"timezone": "re:^Asia/"}},
                "route": "deny",
                "reason": "no Asia today",
            },
            {"match": {"tool": "convert_time"}, "route": "sim"},
        ],
    )
    async with stdio_client(config) as client:
        denied = await client.call_tool("get_current_time", TOKYO, raise_on_error=False)
        allowed = await client.call_tool("get_current_time", {"timezone": "Europe/Paris"})
        simulated = await client.call_tool(
            "convert_time",
            {"source_timezone": "UTC", "time": "10:00", "target_timezone": "Asia/Tokyo"},
            raise_on_error=False,
        )
    assert denied.is_error and meta_of(denied) | {"record_id": None} == {
        "provenance": "none",
        "route": "deny",
        "policy": "rules:no-asia",
        "reason": "no Asia today",
        "record_id": None,
        "safety_class": "safe",
        "safety_reason": "tool name 'get_current_time' says 'get'",
    }
    assert "no Asia today" in denied.content[0].text
    assert meta_of(allowed)["route"] == "real" and meta_of(allowed)["provenance"] == "real"
    assert meta_of(simulated)["route"] == "sim" and meta_of(simulated)["provenance"] == "sim"


async def test_missing_world_model_is_a_clear_sim_error(make_config, tmp_path):
    missing = tmp_path / "no-such-model.gguf"
    config = make_config(mcpServers={"time": time_server()}, mode="sim", world_model={"model_path": str(missing)})
    async with stdio_client(config) as client:
        simulated = await client.call_tool("get_current_time", TOKYO, raise_on_error=False)
        await client.call_tool("get_current_time", TOKYO, raise_on_error=False)  # the router keeps serving
    assert simulated.is_error and meta_of(simulated)["provenance"] == "sim"
    assert f"world model file not found: {missing}" in simulated.content[0].text


async def test_several_upstreams_are_prefixed(make_config):
    config = make_config(mcpServers={"time": time_server(), "toolbox": toolbox_server()})
    async with stdio_client(config) as client:
        names = {t.name for t in await client.list_tools()}
        echoed = await client.call_tool("toolbox_echo", {"text": "hi"})
        timed = await client.call_tool("time_get_current_time", TOKYO)
    assert {"time_get_current_time", "time_convert_time", "toolbox_echo", "toolbox_sleep"} <= names
    assert echoed.content[0].text == "hi" and meta_of(echoed)["provenance"] == "real"
    assert timed.structured_content["timezone"] == "Asia/Tokyo"


async def test_twenty_calls_open_exactly_one_upstream_session(make_config, tmp_path):
    starts = tmp_path / "starts.txt"
    config = make_config(mcpServers={"time": time_server(count_file=starts)})
    async with stdio_client(config) as client:
        await client.list_tools()
        for _ in range(20):
            await client.call_tool("get_current_time", TOKYO)
    assert starts.read_text().splitlines() == ["started"]
