"""`simroute mcp --http` as a subprocess: agent sessions over streamable HTTP."""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor

import httpx2 as httpx
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from kit.launch import child_commands, meta_of, records_of, remote_toolbox, time_server, toolbox_server
from kit.mcp_wire import WireSession, messages_of, rpc

pytestmark = pytest.mark.integration

TOKYO = {"timezone": "Asia/Tokyo"}


async def test_http_lists_routes_and_replays(make_config, simroute_http):
    config = make_config(
        mcpServers={"time": time_server()},
        rules=[{"match": {"arguments": {"timezone": "Europe/*"}}, "route": "replay"}],
    )
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


def test_a_request_id_sent_again_while_in_flight_gets_its_own_answer_from_a_remote_upstream(
    make_config, simroute_http, tmp_path
):
    """A client retrying a call still running sends its id again. The transport keeps one
    answer stream per id, so the first POST used to wait forever (keep-alive pings, no
    answer); now the second waits its turn. The upstream is remote (streamable HTTP)."""
    with remote_toolbox(tmp_path / "toolbox.log") as toolbox:
        config = make_config(mcpServers={"toolbox": toolbox})
        server = simroute_http(config)
        with httpx.Client(timeout=30, trust_env=False) as http:
            session = WireSession(http, server.url)
            calls = [("sleep", {"seconds": 0.5}), ("echo", {"text": "the retry"})]
            pool = ThreadPoolExecutor(2)  # not waited for at the end: a hung POST fails the test, not hangs it
            try:
                posts = [
                    pool.submit(session.post, rpc("tools/call", {"name": tool, "arguments": arguments}, 1))
                    for tool, arguments in calls
                ]
                answers = [post.result(timeout=60) for post in posts]
            finally:
                pool.shutdown(wait=False, cancel_futures=True)
    texts = [messages_of(answer)[-1]["result"]["content"][0]["text"] for answer in answers]
    assert texts == ["slept 0.5", "the retry"]
    assert sorted((r["tool"], r["provenance"]) for r in records_of(config)) == [("echo", "real"), ("sleep", "real")]


async def test_an_mcp_session_closed_by_its_client_closes_its_agent_session_and_upstream(make_config, simroute_http):
    """A client that opens a connection per task and closes it (the SDK sends DELETE)
    must not fill `sessions.max_open`: each close ends its agent session and stops its
    upstream server at once, not at the idle TTL (30 minutes by default)."""
    server = simroute_http(make_config(mcpServers={"toolbox": toolbox_server()}, sessions={"max_open": 2}))
    for task in range(5):
        async with Client(server.url) as client:
            result = await client.call_tool("echo", {"text": f"task {task}"}, raise_on_error=False)
            assert not result.is_error and result.content[0].text == f"task {task}", result.content
            assert len([c for c in child_commands(server.process.pid) if "toolbox.py" in c]) == 1
    deadline = time.monotonic() + 15  # the last upstream stops as its agent session closes (SIGTERM, then its exit)
    while [c for c in child_commands(server.process.pid) if "toolbox.py" in c] and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    assert [c for c in child_commands(server.process.pid) if "toolbox.py" in c] == []
    assert server.log.read_text().count(" closed\n") == 5
