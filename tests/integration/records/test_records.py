"""Every call leaves a record and replay maps right: `simroute mcp` launched as a
user launches it, in front of the test toolbox server (a stateful ticket counter,
resources, prompts, slow and hanging tools)."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest
from fastmcp.exceptions import ToolError
from kit.launch import meta_of, records_of, simroute_executable, stdio_client, toolbox_server

pytestmark = pytest.mark.integration


async def session_of(config, calls):
    """One agent session: the answers (text, provenance) of `calls` (tool, arguments)."""
    async with stdio_client(config) as client:
        results = [await client.call_tool(tool, args, raise_on_error=False) for tool, args in calls]
    return [(r.content[0].text if r.content else "", meta_of(r)["provenance"]) for r in results]


async def test_replay_after_a_mixed_session_gives_back_what_each_occurrence_observed(make_config, tmp_path):
    tickets = tmp_path / "tickets"
    servers = {"toolbox": toolbox_server(TOOLBOX_TICKETS=str(tickets))}
    three, four = [("next_ticket", {})] * 3, [("next_ticket", {})] * 4
    recorded = await session_of(make_config(mcpServers=servers), three)
    assert recorded == [(f"ticket {n}", "real") for n in (1, 2, 3)]
    replaying = make_config(mcpServers=servers, mode="replay")
    mixed = await session_of(replaying, four)  # replays 1-3, then the 4th occurrence goes real
    assert mixed == [("ticket 1", "replay"), ("ticket 2", "replay"), ("ticket 3", "replay"), ("ticket 4", "real")]
    third = await session_of(make_config(mcpServers=servers, mode="replay", replay={"record_mode": "none"}), four)
    assert third == [(f"ticket {n}", "replay") for n in (1, 2, 3, 4)]
    assert tickets.read_text() == "4"  # the real ticket system was called four times in all
    assert [r["occurrence"] for r in records_of(replaying) if r["session"] == records_of(replaying)[-1]["session"]] == [
        1,
        2,
        3,
        4,
    ]


async def test_refusals_resources_and_prompts_are_recorded_calls(make_config):
    config = make_config(mcpServers={"toolbox": toolbox_server()})
    async with stdio_client(config) as client:
        with pytest.raises(ToolError, match="Unknown tool"):
            await client.call_tool("no_such_tool", {})
        resource = await client.read_resource("note://greeting")
        prompt = await client.get_prompt("summarize", {"topic": "records"})
    assert resource[0].text == "hello from a resource"
    assert "Summarize records" in prompt.messages[0].content.text
    rows = records_of(config)
    assert [(r["tool"], r["route"], r["policy"], r["provenance"]) for r in rows] == [
        ("no_such_tool", "deny", "unknown-tool", "none"),
        ("resources/read", "real", "mode", "real"),
        ("prompts/get", "real", "mode", "real"),
    ]
    assert rows[1]["arguments"] == {"uri": "note://greeting"}
    assert rows[2]["arguments"] == {"name": "summarize", "arguments": {"topic": "records"}}

    replayed = make_config(mcpServers={"toolbox": toolbox_server()}, mode="replay", replay={"record_mode": "none"})
    async with stdio_client(replayed) as client:
        again = await client.read_resource("note://greeting")
    assert again[0].text == "hello from a resource" and records_of(replayed)[-1]["provenance"] == "replay"

    denied = make_config(mcpServers={"toolbox": toolbox_server()}, mode="deny")
    async with stdio_client(denied) as client:
        with pytest.raises(Exception, match="simroute denied this call"):
            await client.read_resource("note://greeting")
        with pytest.raises(Exception, match="simroute denied this call"):
            await client.get_prompt("summarize", {"topic": "x"})
    assert [r["route"] for r in records_of(denied)[-2:]] == ["deny", "deny"]


async def test_session_cap_refusals_are_recorded(make_config, simroute_http):
    from fastmcp import Client

    config = make_config(mcpServers={"toolbox": toolbox_server()}, sessions={"max_open": 1})
    server = simroute_http(config)
    async with Client(server.url) as first, Client(server.url) as second:
        await first.call_tool("echo", {"text": "one"})
        refused = await second.call_tool("echo", {"text": "two"}, raise_on_error=False)
    assert refused.is_error and "sessions.max_open" in refused.content[0].text
    rows = records_of(config)
    assert [(r["policy"], r["route"]) for r in rows] == [("mode", "real"), ("sessions", "deny")]
    assert meta_of(refused)["record_id"] == rows[1]["id"]


async def test_a_router_killed_mid_call_leaves_the_call_on_record_as_interrupted(make_config, tmp_path):
    config = make_config(mcpServers={"toolbox": toolbox_server()})
    process = subprocess.Popen(
        [sys.executable, "-c", _AGENT_THAT_WAITS, simroute_executable(), str(config)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout.readline().strip() == "calling"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not [row for row in _rows(tmp_path) if row[1] == "started"]:
            time.sleep(0.1)
        [(record_id, status, owner)] = _rows(tmp_path)  # on record before the upstream answered
        assert status == "started"
        os.kill(int(owner.split(":")[1]), signal.SIGKILL)  # the owner names the router process
    finally:
        process.kill()
        process.wait()
    await session_of(config, [("echo", {"text": "next start"})])  # a new router opens the store
    rows = {r["id"]: r for r in records_of(config)}
    assert rows[record_id]["status"] == "interrupted" and rows[record_id]["tool"] == "sleep"


def _rows(folder):
    try:
        return sqlite3.connect(folder / "records.db").execute("SELECT id, status, owner FROM records").fetchall()
    except sqlite3.Error:
        return []


_AGENT_THAT_WAITS = """
import asyncio, sys, os
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

async def main():
    params = StdioServerParameters(command=sys.argv[1], args=["mcp", "--config", sys.argv[2]], env=dict(os.environ))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        print("calling", flush=True)
        await session.call_tool("sleep", {"seconds": 60})
asyncio.run(main())
"""


@pytest.mark.serial
async def test_a_locked_store_never_stalls_calls_and_loses_no_record(make_config, tmp_path):
    config = make_config(mcpServers={"toolbox": toolbox_server()})
    async with stdio_client(config) as client:
        await client.call_tool("echo", {"text": "warm"})  # the store exists and is open
        holder = subprocess.Popen(
            [sys.executable, "-c", _HOLD_LOCK, str(tmp_path / "records.db"), "3"], stdout=subprocess.PIPE, text=True
        )
        assert holder.stdout.readline().strip() == "locked"
        started = time.monotonic()
        latencies = []
        for n in range(20):
            t0 = time.perf_counter()
            await client.call_tool("echo", {"text": f"n{n}"})
            latencies.append(time.perf_counter() - t0)
        assert time.monotonic() - started < 3, "calls waited for the lock"
        assert holder.wait(10) == 0
        await asyncio.sleep(1.5)  # the spool flushes once the lock is gone
        await client.call_tool("echo", {"text": "after"})
    texts = [r["arguments"].get("text") for r in records_of(config)]
    assert texts == ["warm", *[f"n{n}" for n in range(20)], "after"]
    assert max(latencies) < 1.0


async def test_a_spooled_record_is_redacted_like_a_stored_one(make_config, tmp_path):
    """Redaction comes before the record log: a record the locked store sends to the
    spool holds the marker, never the secret, and so does every file written after."""
    secret = "MSECRETspool0123456789"
    config = make_config(mcpServers={"toolbox": toolbox_server()})
    async with stdio_client(config) as client:
        await client.call_tool("echo", {"text": "warm"})
        holder = subprocess.Popen(
            [sys.executable, "-c", _HOLD_LOCK, str(tmp_path / "records.db"), "3"], stdout=subprocess.PIPE, text=True
        )
        assert holder.stdout.readline().strip() == "locked"
        await client.call_tool("echo", {"text": f"password={secret}"})
        [spool] = tmp_path.rglob("*.spool.jsonl")
        spooled = spool.read_text()  # fsynced before the call returned
        assert "password=[redacted:" in spooled and secret not in spooled
        assert holder.wait(10) == 0
    texts = [r["arguments"].get("text") for r in records_of(config)]
    assert texts[0] == "warm" and texts[1].startswith("password=[redacted:")  # flushed into the store
    assert [path.name for path in tmp_path.rglob("*") if path.is_file() and secret.encode() in path.read_bytes()] == []


_HOLD_LOCK = """
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
db.execute("COMMIT")
"""


@pytest.mark.serial
async def test_a_hung_listing_blocks_no_call_that_needs_no_upstream(make_config):
    servers = {"toolbox": toolbox_server()}
    await session_of(make_config(mcpServers=servers), [("echo", {"text": "snapshot"})])  # tools known from now on
    hung = {"toolbox": toolbox_server(TOOLBOX_HANG_LISTINGS="1")}
    config = make_config(
        mcpServers=hung, mode="deny", list_timeout_s=3, rules=[{"match": {"tool": "echo"}, "route": "replay"}]
    )
    async with stdio_client(config) as client:
        await client.list_tools()  # the agent's own listing: answered from the snapshot after its 3 s deadline
        timed = []
        for tool, args in [("echo", {"text": "snapshot"}), ("sleep", {"seconds": 1})]:
            started = time.monotonic()
            result = await client.call_tool(tool, args, raise_on_error=False)
            timed.append((result.content[0].text, meta_of(result)["provenance"], time.monotonic() - started))
    assert timed[0][:2] == ("snapshot", "replay")
    assert "simroute denied this call" in timed[1][0] and timed[1][1] == "none"
    assert max(seconds for _, _, seconds in timed) < 1.0  # the calls never waited on the hung listing


async def test_simroutes_deadline_error_is_never_replayed_as_the_upstreams_answer(make_config):
    servers = {"toolbox": {**toolbox_server(), "timeout": 1}}
    config = make_config(mcpServers=servers)
    [(text, provenance)] = await session_of(config, [("sleep", {"seconds": 5})])
    assert "deadline" in text and provenance == "none"
    replay = make_config(mcpServers=servers, mode="replay", replay={"record_mode": "none"})
    [(text, provenance)] = await session_of(replay, [("sleep", {"seconds": 5})])
    assert provenance == "none" and "answered by none" in text


async def test_simroute_recordings_lists_the_named_recordings(make_config):
    servers = {"toolbox": toolbox_server()}
    await session_of(make_config(mcpServers=servers), [("echo", {"text": "unnamed"})])
    nightly = make_config(mcpServers=servers, replay={"recording": "nightly"})
    await session_of(nightly, [("echo", {"text": "a"}), ("echo", {"text": "b"})])
    await session_of(nightly, [("echo", {"text": "c"})])
    await session_of(make_config(mcpServers=servers, replay={"recording": "smoke"}), [("get_motto", {})])
    listed = subprocess.run(
        [simroute_executable(), "recordings", "--config", str(nightly)], capture_output=True, text=True, check=True
    )
    lines = {line.split()[0]: line.split() for line in listed.stdout.splitlines() if line.strip()}
    assert set(lines) == {"nightly", "smoke"}  # the untagged session is no recording
    assert lines["nightly"][1:5] == ["2", "session(s)", "3", "record(s)"]
    assert lines["smoke"][1:5] == ["1", "session(s)", "1", "record(s)"]
    assert [r["recording"] for r in records_of(nightly)] == [None, "nightly", "nightly", "nightly", "smoke"]


async def test_resources_and_prompts_on_the_sim_route_answer_an_error_naming_them_on_record(make_config):
    config = make_config(mcpServers={"toolbox": toolbox_server()}, mode="sim")
    async with stdio_client(config) as client:
        with pytest.raises(Exception, match="resources/read") as resource_error:
            await client.read_resource("note://greeting")
        with pytest.raises(Exception, match="prompts/get") as prompt_error:
            await client.get_prompt("summarize", {"topic": "records"})
    assert "hello from a resource" not in str(resource_error.value)
    assert "Summarize" not in str(prompt_error.value)
    rows = records_of(config)
    assert [(r["tool"], r["route"], r["provenance"], r["observation"]["is_error"]) for r in rows] == [
        ("resources/read", "sim", "none", True),
        ("prompts/get", "sim", "none", True),
    ]
    assert rows[0]["arguments"] == {"uri": "note://greeting"}
    assert rows[1]["arguments"] == {"name": "summarize", "arguments": {"topic": "records"}}
    assert "resources/read" in rows[0]["observation"]["content"][0]["text"]
    assert "prompts/get" in rows[1]["observation"]["content"][0]["text"]


@pytest.mark.serial
async def test_hung_resource_and_prompt_listings_answer_an_error_within_their_deadline(make_config):
    config = make_config(mcpServers={"toolbox": toolbox_server(TOOLBOX_HANG_RESOURCE_LISTINGS="1")}, list_timeout_s=2)
    async with stdio_client(config) as client:
        timed, listed = [], []
        for listing in (client.list_resources, client.list_prompts):
            started = time.monotonic()
            listed.append(await asyncio.wait_for(listing(), 20))  # a listing without a deadline would hang here
            timed.append(time.monotonic() - started)
        answered = await client.call_tool("echo", {"text": "still served"})  # the session is not stuck
    assert all(1.5 < seconds < 6 for seconds in timed), timed  # the 2 s deadline, not the upstream, ended them
    assert listed == [[], []]  # the hung upstream's resources and prompts are left out, not waited for
    assert answered.content[0].text == "still served"
