"""`simroute records` and `simroute explain --session` show where a session diverged
into its fork: the fork's first call, and what was copied into it."""

from __future__ import annotations

import asyncio
import json

from kit.records import forked_session
from typer.testing import CliRunner

from records.store.sqlite.store import SQLiteStore
from router.cli.main import app


async def stored(tmp_path) -> tuple[str, list[dict]]:
    store = await SQLiteStore(tmp_path / "r.db").open()
    rows = [record.to_json() for record in forked_session("alice-s1", ts=1_800_000_000.0)]
    await store.upsert(rows)
    await store.aclose()
    config = tmp_path / "simroute.yaml"
    config.write_text(json.dumps({"store": {"path": str(tmp_path / "r.db")}, "shell": {"enabled": True}}))
    return str(config), rows


async def cli(*arguments: str):
    out = await asyncio.to_thread(CliRunner().invoke, app, list(arguments))  # the command runs its own event loop
    assert out.exit_code == 0, out.output
    return out.output


async def test_records_mark_the_forks_first_call_with_what_was_copied(tmp_path):
    config, rows = await stored(tmp_path)
    lines = (await cli("records", "--config", config, "--session", "alice-s1")).splitlines()
    assert len(lines) == 4 and lines[1].startswith(rows[1]["id"][:12])  # the marker follows the forked call
    assert lines[2].strip() == (
        "^ diverged into fork fork-1a2b (from session sandbox): "
        "copied /workspace 2.0 KB, /tmp 0 B, cwd /workspace/data, 7 variables"
    )
    printed = [json.loads(line) for line in (await cli("records", "--config", config, "--json")).splitlines()]
    assert [row.get("fork_divergence", {}).get("step") for row in printed] == [None, 1, None]
    assert printed[1]["fork_divergence"]["copied"]["folders"] == {"/workspace": 2048, "/tmp": 0}
    assert "fork_divergence" not in printed[0]  # other records are printed as stored


async def test_explain_names_where_the_session_diverged_into_its_fork(tmp_path):
    config, rows = await stored(tmp_path)
    call = {"channel": "shell", "name": "shell_exec", "arguments": {"command": "ls"}}
    out = await cli("explain", "--config", config, "--call", json.dumps(call), "--session", "alice-s1")
    (point,) = json.loads(out)["fork_divergence"]
    assert (point["record"], point["step"], point["fork"], point["container"]) == (
        rows[1]["id"],
        1,
        "fork-1a2b",
        "simroute-fork-1a2b",
    )
    assert point["copied"]["cwd"] == "/workspace/data"
