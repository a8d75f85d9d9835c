"""Bad input through `simroute mcp`: each gets a clear answer, other calls keep
being served, and every routed call is recorded."""

from __future__ import annotations

import subprocess
import time

import pytest
from fastmcp.exceptions import ToolError
from kit.launch import meta_of, records_of, simroute_executable, stdio_client, time_server, toolbox_server

pytestmark = pytest.mark.integration


async def test_unknown_tool_and_invalid_arguments(make_config):
    config = make_config(mcpServers={"time": time_server()})
    async with stdio_client(config) as client:
        with pytest.raises(ToolError, match="Unknown tool: 'get_weather'"):
            await client.call_tool("get_weather", {"city": "Oslo"})
        missing = await client.call_tool("get_current_time", {}, raise_on_error=False)
        wrong_type = await client.call_tool("get_current_time", {"timezone": 42}, raise_on_error=False)
        fine = await client.call_tool("get_current_time", {"timezone": "UTC"})
    assert missing.is_error and "'timezone' is a required property" in missing.content[0].text
    assert meta_of(missing)["policy"] == "input-schema" and meta_of(missing)["route"] == "deny"
    assert wrong_type.is_error and "timezone: 42 is not of type 'string'" in wrong_type.content[0].text
    assert meta_of(fine)["provenance"] == "real"
    assert [r["policy"] for r in records_of(config)] == [
        "unknown-tool",
        "input-schema",
        "input-schema",
        "mode",
    ]  # every call on record


async def test_upstream_tool_error_passes_through_tagged_real(make_config):
    config = make_config(mcpServers={"toolbox": toolbox_server()})
    async with stdio_client(config) as client:
        failed = await client.call_tool("fail", {"message": "disk on fire"}, raise_on_error=False)
    assert failed.is_error and "disk on fire" in failed.content[0].text
    assert meta_of(failed)["provenance"] == "real" and meta_of(failed)["route"] == "real"


async def test_upstream_that_cannot_start_leaves_the_others_served(make_config):
    config = make_config(
        mcpServers={"time": time_server(), "broken": {"command": "/nonexistent/mcp-server"}},
        startup_timeout_s=10,
    )
    async with stdio_client(config) as client:
        names = {t.name for t in await client.list_tools()}
        served = await client.call_tool("time_get_current_time", {"timezone": "UTC"})
    assert names == {"time_get_current_time", "time_convert_time"}
    assert meta_of(served)["provenance"] == "real"


@pytest.mark.serial
async def test_upstream_that_hangs_at_start_fails_within_startup_timeout(make_config):
    config = make_config(
        mcpServers={"hung": {"command": "/bin/sleep", "args": ["600"]}, "time": time_server()},
        startup_timeout_s=2,
    )
    async with stdio_client(config) as client:
        started = time.monotonic()
        names = {t.name for t in await client.list_tools()}
        elapsed = time.monotonic() - started
        served = await client.call_tool("time_get_current_time", {"timezone": "UTC"})
    assert names == {"time_get_current_time", "time_convert_time"}
    assert elapsed < 8
    assert meta_of(served)["provenance"] == "real"


@pytest.mark.serial
async def test_call_deadline_then_next_call_works(make_config):
    config = make_config(mcpServers={"toolbox": {**toolbox_server(), "timeout": 1.0}})
    async with stdio_client(config) as client:
        await client.call_tool("echo", {"text": "warm"})
        started = time.monotonic()
        slow = await client.call_tool("sleep", {"seconds": 30}, raise_on_error=False)
        elapsed = time.monotonic() - started
        after = await client.call_tool("echo", {"text": "still here"})
    assert slow.is_error and "within its 1s deadline" in slow.content[0].text
    assert (
        meta_of(slow)["provenance"] == "none" and meta_of(slow)["route"] == "real"
    )  # simroute's answer, not the upstream's
    assert elapsed < 3
    assert after.content[0].text == "still here"
    assert [r["observation"]["is_error"] for r in records_of(config)] == [False, True, False]


async def test_upstream_crash_mid_session_then_a_new_upstream(make_config, tmp_path):
    config = make_config(mcpServers={"toolbox": toolbox_server()})
    async with stdio_client(config) as client:
        await client.call_tool("echo", {"text": "before"})
        crashed = await client.call_tool("crash", {}, raise_on_error=False)
        after = await client.call_tool("echo", {"text": "after"})
    assert crashed.is_error and "toolbox" in crashed.content[0].text
    assert "record_id" in meta_of(crashed)
    assert after.content[0].text == "after" and meta_of(after)["provenance"] == "real"
    assert len(records_of(config)) == 3


def test_malformed_config_names_file_line_and_key(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("mode: real\nmcpServers:\n  time:\n    comand: mcp-server-time\n")
    out = subprocess.run(
        [simroute_executable(), "mcp", "--config", str(bad)], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 2
    assert f"{bad}:4: mcpServers.time.comand: unknown key" in out.stderr
    assert out.stdout == ""


def test_missing_config_file_is_a_clear_error(tmp_path):
    out = subprocess.run(
        [simroute_executable(), "records", "--config", str(tmp_path / "nope.yaml")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2 and "nope.yaml: cannot read config file" in out.stderr
