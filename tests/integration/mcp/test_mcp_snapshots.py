"""Tool snapshots: an upstream that cannot start is still listed and served by
replay (and sim); a changed tool list is noted in the record."""

from __future__ import annotations

import pytest
from kit.launch import meta_of, stdio_client, time_server, toolbox_server

pytestmark = pytest.mark.integration


async def test_offline_upstream_is_listed_from_snapshot_and_replayed(make_config):
    async with stdio_client(make_config(mcpServers={"time": time_server()})) as client:
        recorded = await client.call_tool("get_current_time", {"timezone": "Asia/Tokyo"})

    offline = make_config(
        mcpServers={"time": {"command": "/nonexistent/mcp-server-time"}}, mode="replay", startup_timeout_s=5
    )
    async with stdio_client(offline) as client:
        tools = {t.name: t for t in await client.list_tools()}
        replayed = await client.call_tool("get_current_time", {"timezone": "Asia/Tokyo"})
        real_miss = await client.call_tool(
            "convert_time",
            {"source_timezone": "UTC", "time": "10:00", "target_timezone": "Asia/Tokyo"},
            raise_on_error=False,
        )
    assert set(tools) == {"get_current_time", "convert_time"}
    assert tools["get_current_time"].output_schema is not None
    assert meta_of(replayed)["provenance"] == "replay"
    assert replayed.structured_content == recorded.structured_content
    # The miss goes real (replay.on_miss defaults to real) and the upstream cannot start: a clear error.
    assert real_miss.is_error and "failed to start" in real_miss.content[0].text
    assert meta_of(real_miss)["provenance"] == "none"


async def test_changed_tool_list_is_noted_once(make_config):
    async with stdio_client(make_config(mcpServers={"toolbox": toolbox_server()})) as client:
        await client.list_tools()
        await client.call_tool("echo", {"text": "a"})
    changed = {**toolbox_server(), "env": {"TOOLBOX_EXTRA_TOOL": "1"}}
    async with stdio_client(make_config(mcpServers={"toolbox": changed})) as client:
        names = {t.name for t in await client.list_tools()}
        first = await client.call_tool("echo", {"text": "b"})
        second = await client.call_tool("echo", {"text": "c"})
    assert "extra" in names
    assert "tool definitions of 'toolbox' changed" in meta_of(first)["note"]
    assert "note" not in meta_of(second)
