"""MCP per episode (`/mcp/e/{id}`) with the official MCP SDK's client, and verifiers,
on `simroute serve` launched as a user launches it."""

from __future__ import annotations

import json
import textwrap

import httpx2 as httpx
import pytest
from kit.episodes import serving_episodes, text_of
from kit.launch import toolbox_server, write_config
from mcp import Client

pytestmark = pytest.mark.integration

SHELL = {"enabled": True, "pool_size": 0}


def _text(result) -> str:
    return "\n".join(block.text for block in result.content if getattr(block, "type", "") == "text")


async def test_two_episodes_over_mcp_keep_their_sandboxes_apart(tmp_path):
    config = write_config(tmp_path, mcpServers={"toolbox": toolbox_server()}, shell=SHELL)
    with serving_episodes(config) as served:
        reset = served.reset(options={"route": "real", "channels": ["shell"]}).json()
        other = served.open(options={"route": "real", "channels": ["shell"]})
        assert reset["mcp_url"] == f"/mcp/e/{reset['episode_id']}"
        async with Client(served.url + reset["mcp_url"]) as one, Client(f"{served.url}/mcp/e/{other}") as two:
            names = {tool.name for tool in (await one.list_tools()).tools}
            assert names == {"shell_exec"}  # the episode's channels only: no toolbox tools
            wrote = await one.call_tool("shell_exec", {"command": "echo one > mine.txt && ls"})
            assert "mine.txt" in _text(wrote)
            looked = await two.call_tool(
                "shell_exec", {"command": "ls -a; test -e mine.txt && echo FOUND || echo ABSENT"}
            )
            assert "ABSENT" in _text(looked) and "FOUND" not in _text(looked)
            assert (wrote.meta or {})["simroute"]["provenance"] == "real"
            outside = await one.call_tool("echo", {"text": "x"})  # a tool outside the episode's channels
            assert outside.is_error and "Unknown tool" in _text(outside)
        assert (
            served.state(reset["episode_id"])["step_count"] == 2
        )  # its MCP tool calls are its steps (a listing is not)
        missing = served.http.post(f"{served.url}/mcp/e/not-an-episode", json={})
        assert missing.status_code == 404


def _rpc(http: httpx.Client, url: str, body: dict, session: str | None = None) -> tuple[httpx.Response, dict | None]:
    headers = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18"}
    if session:
        headers["mcp-session-id"] = session
    response = http.post(url, json=body, headers=headers)
    data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
    payload = (
        json.loads(data[-1])
        if data
        else (response.json() if response.content and "json" in response.headers.get("content-type", "") else None)
    )
    return response, payload


def test_a_retried_tools_call_with_the_same_request_id_is_answered_once(tmp_path):
    config = write_config(tmp_path, mcpServers={"toolbox": toolbox_server()}, shell=SHELL)
    with serving_episodes(config) as served:
        episode = served.open(options={"route": "real", "channels": ["shell"]})
        url = f"{served.url}/mcp/e/{episode}"
        init = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "retry-test", "version": "1"},
            },
        }
        response, _ = _rpc(served.http, url, init)
        session = response.headers["mcp-session-id"]
        _rpc(served.http, url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
        call = {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "shell_exec", "arguments": {"command": "echo x >> count.txt && wc -l < count.txt"}},
        }
        _, first = _rpc(served.http, url, call, session)
        _, retried = _rpc(served.http, url, call, session)  # the harness lost the answer and retries
        assert first["result"] == retried["result"]
        assert "1" in first["result"]["content"][0]["text"]
        again = {**call, "id": 8}  # a new request runs again
        _, second = _rpc(served.http, url, again, session)
        assert "2" in second["result"]["content"][0]["text"]


VERIFIER = textwrap.dedent(
    """
    def echoes(episode):
        # the reward: how many echo calls the agent made, read from the episode's records
        return sum(
            1 for record in episode.records if record["tool"] == "echo" and not record["observation"]["is_error"]
        )
    """
)


def test_an_entry_point_and_a_sandbox_command_verifier_each_return_the_reward(tmp_path):
    (tmp_path / "my_verifiers.py").write_text(VERIFIER)
    config = write_config(
        tmp_path,
        mcpServers={"toolbox": toolbox_server()},
        shell=SHELL,
        episodes={
            "verifiers": {
                "echoes": {"entry_point": "my_verifiers:echoes"},
                "answer": {"command": "cat answer.txt"},
                "solved": {"command": "test -f solved"},
            }
        },
    )
    import os

    with serving_episodes(config, PYTHONPATH=f"{tmp_path}:{os.environ.get('PYTHONPATH', '')}") as served:
        counted = served.open(options={"route": "real", "verifier": "echoes"})
        for word in ("a", "b", "c"):
            assert text_of(served.call(counted, "echo", text=word)) == word
        verified = served.http.post(f"{served.url}/episodes/{counted}/verify")
        assert verified.status_code == 200 and verified.json()["reward"] == 3.0

        graded = served.open(options={"route": "real", "verifier": "answer", "files": {"answer.txt": "score: 0.75\n"}})
        assert served.http.post(f"{served.url}/episodes/{graded}/verify").json()["reward"] == 0.75
        assert served.state(graded)["reward"] == 0.75

        exit_coded = served.open(options={"route": "real", "verifier": "solved"})
        assert (
            served.http.post(f"{served.url}/episodes/{exit_coded}/verify").json()["reward"] == 0.0
        )  # no file yet: exit 1
        served.call(exit_coded, "shell_exec", command="touch solved")
        assert served.http.post(f"{served.url}/episodes/{exit_coded}/verify").json()["reward"] == 1.0

        dreamed = served.open(
            options={"route": "sim", "verifier": "solved", "files": {"solved": ""}}
        )  # a simulated shell
        refused = served.http.post(f"{served.url}/episodes/{dreamed}/verify")
        assert refused.status_code == 422 and "simulated" in refused.json()["error"]


async def test_a_new_mcp_connection_reusing_request_ids_is_not_answered_from_an_earlier_ones_calls(tmp_path):
    """Request ids restart with every MCP session: a harness that connects once per step
    sends the same id again, and its call must run (only a retry on the same session is
    answered once)."""
    config = write_config(tmp_path, mcpServers={"toolbox": toolbox_server()})
    with serving_episodes(config) as served:
        episode = served.open(options={"route": "real", "channels": ["mcp"]})
        seen = []
        for _ in range(2):
            async with Client(f"{served.url}/mcp/e/{episode}") as client:
                seen.append(_text(await client.call_tool("get_visits", {})))
        assert seen[0] != seen[1], seen
