"""`simroute mcp --http` as a subprocess: agent sessions over streamable HTTP."""

from __future__ import annotations

import asyncio

import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from kit.launch import meta_of, time_server

pytestmark = pytest.mark.integration

TOKYO = {"timezone": "Asia/Tokyo"}


async def test_http_lists_routes_and_replays(make_config, simroute_http):
    config = make_config(mcpServers={"time": time_server()}, rules=[{"match": {"arguments": {"timezone": "Europe/*"}}, "route": "replay"}])
    server = simroute_http(config)
    async with Client(server.url) as first:
        names = {t.name for t in await first.list_tools()}
        real = await first.call_tool("get_current_time", TOKYO)
        recorded = await first.call_tool("get_current_time", {"timezone": "Europe/Rome"})
    async with Client(server.url) as second:
        replayed = await second.call_tool("get_current_time", {"timezone": "Europe/Rome"})
    assert names == {"get_current_time", "convert_time"}
    assert meta_of(real)["provenance"] == "real"
    assert meta_of(recorded)["route"] == "replay" and meta_of(recorded)["provenance"] == "real"
    assert meta_of(replayed)["provenance"] == "replay"
    assert replayed.structured_content == recorded.structured_content


async def test_each_http_agent_session_gets_one_warm_upstream(make_config, simroute_http, tmp_path):
    starts = tmp_path / "starts.txt"
    server = simroute_http(make_config(mcpServers={"time": time_server(count_file=starts)}))

    async def agent() -> set[str]:
        async with Client(server.url) as client:
            results = [await client.call_tool("get_current_time", TOKYO) for _ in range(10)]
        return {meta_of(r)["record_id"] for r in results}

    ids_a, ids_b = await asyncio.gather(agent(), agent())
    assert len(ids_a) == len(ids_b) == 10 and not ids_a & ids_b
    assert starts.read_text().splitlines() == ["started", "started"]


async def test_explicit_session_header_joins_one_agent_session(make_config, simroute_http, tmp_path):
    starts = tmp_path / "starts.txt"
    server = simroute_http(make_config(mcpServers={"time": time_server(count_file=starts)}))
    headers = {"X-Simroute-Session": "agent-42"}
    for _ in range(2):  # two MCP connections, one declared agent session
        async with Client(StreamableHttpTransport(server.url, headers=headers)) as client:
            await client.call_tool("get_current_time", TOKYO)
    assert starts.read_text().splitlines() == ["started"]
