"""An agent session moves to another replica with the official MCP SDK client: the
MCP transport session is per process, so when its replica is killed the client
initialises again (through the balancer; here, at the other replica) naming its agent
session with `X-Simroute-Session`, and the session goes on there — its steps
counted on, its history given to the world model — as docs/deployment.md shows."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx2 as httpx
import pytest
from kit.launch import notes_server, records_of, toolbox_server
from kit.model_stub import ModelStub
from kit.replicas import kill, two_replicas
from kit.sandboxes import owner_of
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

pytestmark = pytest.mark.integration

AGENT_SESSION = "agent-resumes-7"


@asynccontextmanager
async def agent_session(url: str) -> AsyncIterator[ClientSession]:
    """One MCP client session at `url`, naming the agent session by the header."""
    headers = {"X-Simroute-Session": AGENT_SESSION}
    async with (
        httpx.AsyncClient(headers=headers, timeout=60, trust_env=False) as http,
        streamable_http_client(url, http_client=http, terminate_on_close=False) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def call_all(urls: list[str], calls: list[tuple[str, dict]], *, after_each=lambda done: None) -> tuple[list, int]:
    """The reconnect pattern of docs/deployment.md: the calls in one MCP client session;
    when its replica is gone (the SDK's transport fails: connection refused, or the
    balancer's other replica answers "Session terminated"), initialise again at the next
    address and send the unanswered call again. (results, reconnects)"""
    results: list = []
    reconnects = 0
    while len(results) < len(calls):
        try:
            async with agent_session(urls[0]) as session:
                for tool, arguments in calls[len(results) :]:
                    results.append(await session.call_tool(tool, arguments))
                    after_each(len(results))
        except* (httpx.TransportError, MCPError):
            urls.pop(0)  # a balancer would pick a live replica
            reconnects += 1
    return results, reconnects


async def test_the_sdk_client_resumes_its_agent_session_on_another_replica_after_a_kill(tmp_path, redis_server):
    with ModelStub('{"result": "simulated"}') as stub:
        world_model = {"engine": "openai", "url": stub.url, "model": "stub"}
        with two_replicas(
            tmp_path, redis_server.url, mcpServers={"toolbox": toolbox_server()}, world_model=world_model, mode="sim"
        ) as (
            a,
            b,
        ):
            words = ["quartz", "basalt", "gneiss", "marble"]
            calls = [("echo", {"text": word}) for word in words]
            results, reconnects = await call_all(
                [f"{a.url}/mcp", f"{b.url}/mcp"], calls, after_each=lambda done: kill(a) if done == 3 else None
            )
            assert reconnects == 1 and [r.is_error for r in results] == [False] * 4
            assert all(word in json.dumps(stub.bodies[-1]["messages"]) for word in words[:3])  # A's turns, told on B

            records = [
                r for r in records_of(b.log.parent / "simroute.yaml", "--session", AGENT_SESSION) if r["tool"] == "echo"
            ]
            assert [r["arguments"]["text"] for r in records] == ["quartz", "basalt", "gneiss", "marble"]
            assert [r["step"] for r in records] == [0, 1, 2, 3]  # counted on across the replicas
            assert {r["provenance"] for r in records} == {"sim"}


async def test_an_episodes_mcp_url_resumes_on_another_replica_after_a_kill(tmp_path, redis_server):
    with ModelStub('{"result": "simulated"}') as stub:
        world_model = {"engine": "openai", "url": stub.url, "model": "stub"}
        with two_replicas(
            tmp_path, redis_server.url, mcpServers={"toolbox": toolbox_server()}, world_model=world_model
        ) as (a, b):
            lister = a.open(options={"route": "real"})
            a.step(lister, {"type": "list_tools"})
            episode = a.open(seed=9, episode_id="by-url", options={"route": "sim"})
            words = ["amber", "coral", "jade", "pearl"]
            results, reconnects = await call_all(
                [f"{a.url}/mcp/e/{episode}", f"{b.url}/mcp/e/{episode}"],
                [("echo", {"text": word}) for word in words],
                after_each=lambda done: kill(a) if done == 2 else None,
            )
            assert reconnects == 1 and [r.is_error for r in results] == [False] * 4
            assert all(word in json.dumps(stub.bodies[-1]["messages"]) for word in words[:3])
            records = [
                r
                for r in records_of(b.log.parent / "simroute.yaml", "--session", f"episode-{episode}")
                if r["tool"] == "echo"
            ]
            assert [r["arguments"]["text"] for r in records] == words
            assert b.state(episode)["seed"] == 9  # the episode, taken over by B


async def test_a_stateful_upstream_that_lived_on_a_killed_replica_is_named_lost_not_started_empty(
    tmp_path, redis_server
):
    notes = {**notes_server(), "stateful": True}
    with two_replicas(tmp_path, redis_server.url, mcpServers={"notes": notes}) as (a, b):
        async with agent_session(f"{a.url}/mcp") as session:
            created = await session.call_tool("create_note", {"title": "keep", "body": "me"})
            assert created.is_error is False
        a_owner = owner_of(a.process.pid)
        kill(a)
        async with agent_session(f"{b.url}/mcp") as session:
            lost = await session.call_tool("list_notes", {})
        text = lost.content[0].text
        assert (
            lost.is_error is True
            and "upstream MCP session of 'notes' was lost with replica" in text
            and a_owner in text
        ), text
        assert not any("notes_store" in command for command in b.children())  # no empty notes store started on B
        [record] = [
            r
            for r in records_of(b.log.parent / "simroute.yaml", "--session", AGENT_SESSION)
            if r["tool"] == "list_notes"
        ]
        assert record["provenance"] == "none"


async def test_a_tools_call_with_an_idempotency_key_runs_once_across_replicas(tmp_path, redis_server):
    """`params._meta["simroute/idempotency-key"]`: the retry of a call on another replica
    gets the first answer (the real side ran once); the key with other arguments is
    refused; a retry whose first request died with its replica is told so, not run again."""
    tickets = tmp_path / "tickets.txt"
    toolbox = toolbox_server(TOOLBOX_TICKETS=str(tickets))
    with two_replicas(tmp_path, redis_server.url, mcpServers={"toolbox": toolbox}) as (a, b):
        async with agent_session(f"{a.url}/mcp") as on_a:
            first = await on_a.call_tool("next_ticket", {}, meta={"simroute/idempotency-key": "ticket-1"})
        async with agent_session(f"{b.url}/mcp") as on_b:
            retried = await on_b.call_tool("next_ticket", {}, meta={"simroute/idempotency-key": "ticket-1"})
            other = await on_b.call_tool("next_ticket", {}, meta={"simroute/idempotency-key": "ticket-2"})
            misused = await on_b.call_tool("echo", {"text": "x"}, meta={"simroute/idempotency-key": "ticket-1"})
        assert first.content[0].text == retried.content[0].text == "ticket 1" and other.content[0].text == "ticket 2"
        assert tickets.read_text() == "2"  # the retry did not reach the real side
        assert misused.is_error and "was used for another action" in misused.content[0].text
        assert (misused.meta or {})["simroute"]["provenance"] == "none"

        async with agent_session(f"{a.url}/mcp") as on_a:
            import asyncio

            running = asyncio.create_task(
                on_a.call_tool("sleep", {"seconds": 60}, meta={"simroute/idempotency-key": "slow-1"})
            )
            for _ in range(100):  # its record written: the call is running on A
                await asyncio.sleep(0.1)
                if any(
                    r["tool"] == "sleep" for r in records_of(a.log.parent / "simroute.yaml", "--session", AGENT_SESSION)
                ):
                    break
            kill(a)
            with pytest.raises(BaseException):  # noqa: B017  (the SDK's transport fails in its own way)
                await running
        async with agent_session(f"{b.url}/mcp") as on_b:
            lost = await on_b.call_tool("sleep", {"seconds": 60}, meta={"simroute/idempotency-key": "slow-1"})
        assert lost.is_error and "which stopped before answering" in lost.content[0].text, lost
        assert (lost.meta or {})["simroute"]["policy"] == "idempotency"
