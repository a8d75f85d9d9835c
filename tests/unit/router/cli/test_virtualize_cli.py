"""`simroute virtualize`: a server that cannot be listed live is virtualized from the
store's snapshot; bad input gets a clear error."""

from __future__ import annotations

import asyncio

import yaml
from kit.launch import write_config
from typer.testing import CliRunner

from records.store.sqlite.store import SQLiteStore
from router.cli.main import app
from router.config import load_config

SNAPSHOT = [
    {
        "name": "lookup",
        "description": "Look a word up.",
        "inputSchema": {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]},
        "annotations": {"readOnlyHint": True},
        "icons": [{"src": "https://example.invalid/icon.png"}],
    }
]
OFFLINE = {"command": "/nonexistent/dictionary-server", "sim_timeout": 12}


def snapshot_store(tmp_path) -> None:
    async def fill():
        store = await SQLiteStore(tmp_path / "records.db").open()
        await store.save_tool_snapshot("dictionary", SNAPSHOT)
        await store.aclose()

    asyncio.run(fill())


def run(*args: str):
    return CliRunner().invoke(app, ["virtualize", *args])


def test_an_unreachable_server_is_virtualized_from_the_stores_snapshot(tmp_path):
    snapshot_store(tmp_path)
    config = write_config(
        tmp_path, mcpServers={"dictionary": OFFLINE}, replay={"recording": "golden"}, startup_timeout_s=5
    )
    output = tmp_path / "virtual.yaml"
    result = run("dictionary", "--config", str(config), "--initial-state", "Words of 1850.", "--output", str(output))
    assert result.exit_code == 0, result.output
    assert (
        "could not list 'dictionary' live" in result.output and "1 tool(s) from the store's snapshot" in result.output
    )
    written = yaml.safe_load(output.read_text())
    assert written["mcpServers"]["dictionary"] == {
        "type": "virtual",
        "tools": [{k: v for k, v in SNAPSHOT[0].items() if k != "icons"}],
        "initial_state": "Words of 1850.",
        "sim_timeout": 12,
    }
    assert "recording" not in written["replay"]  # sessions of the virtual server join no recording
    assert written["store"] == {"path": str(tmp_path / "records.db")}  # the rest of the config kept
    assert set(load_config(output).virtual_servers) == {"dictionary"}  # what is written loads


def test_bad_input_gets_a_clear_error(tmp_path):
    snapshot_store(tmp_path)
    config = write_config(
        tmp_path, mcpServers={"dictionary": OFFLINE, "weather": {"type": "virtual", "tools": [{"name": "f"}]}}
    )
    unknown = run("nothing", "--config", str(config))
    assert (
        unknown.exit_code == 2
        and "no MCP server named 'nothing'" in unknown.output
        and "dictionary, weather" in unknown.output
    )
    twice = run("weather", "--config", str(config))
    assert twice.exit_code == 2 and "'weather' is already a virtual server" in twice.output
    no_recording = run("dictionary", "--config", str(config), "--from-snapshot", "--recording", "golden")
    assert no_recording.exit_code == 1 and "no recording named 'golden' (recordings: none" in no_recording.output
