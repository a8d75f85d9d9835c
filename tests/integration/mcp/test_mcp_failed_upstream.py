"""An upstream that cannot start is visible: its tools listed from the pinned snapshot
marked unavailable, or a log message naming it and why; `/health` says which; `simroute
check-config` names it and exits non-zero."""

from __future__ import annotations

import subprocess

import httpx2 as httpx
import pytest
from fastmcp import Client
from kit.launch import simroute_executable, stdio_client, write_config
from kit.serve import serving
from kit.transparency import everything_server

pytestmark = pytest.mark.integration


async def test_a_failed_upstream_is_listed_from_its_snapshot_or_named_and_health_and_check_config_say_it(tmp_path):
    async with stdio_client(write_config(tmp_path, mcpServers={"box": everything_server()})) as client:
        listed = {tool.name for tool in await client.list_tools()}  # pinned and snapshotted

    config = write_config(
        tmp_path, mcpServers={"box": {"command": "/nonexistent/box-server"}, "gone": {"command": "/nonexistent/gone"}}
    )
    notes: list = []

    async def note(message):
        if getattr(message, "method", None) == "notifications/message":
            notes.append(message.params)

    with serving(config, tmp_path / "serve.log") as port:
        async with Client(f"http://127.0.0.1:{port}/mcp", message_handler=note) as client:
            tools = await client.list_tools()
        async with httpx.AsyncClient(timeout=30, trust_env=False) as http:
            health = (await http.get(f"http://127.0.0.1:{port}/health")).json()

    # The snapshot's tools, marked unavailable with the cause; none of the server never seen.
    assert {tool.name for tool in tools} == {f"box_{name}" for name in listed}
    assert all("failed to start" in tool.meta["simroute"]["unavailable"] for tool in tools)
    said = {note.data.split("'")[1]: note.data for note in notes if note.logger == "simroute"}
    assert "listed from its last snapshot" in said["box"] and "failed to start" in said["box"]
    assert "none are listed" in said["gone"] and "/nonexistent/gone" in said["gone"]

    assert health["status"] == "healthy"
    assert {name: state["ok"] for name, state in health["upstreams"].items()} == {"box": False, "gone": False}
    assert "failed to start" in health["upstreams"]["gone"]["error"]

    checked = subprocess.run(
        [simroute_executable(), "check-config", "--config", str(config)], capture_output=True, text=True, timeout=60
    )
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert "server 'box' cannot start: command '/nonexistent/box-server' not found" in checked.stderr
    assert "server 'gone' cannot start" in checked.stderr
