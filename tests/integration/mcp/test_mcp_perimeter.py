"""Who may talk to `simroute mcp --http`: Host and Origin always checked (DNS
rebinding), bearer tokens when configured, and sessions namespaced by token, so
another token naming the same session never reaches the first one's sandbox."""

from __future__ import annotations

import subprocess

import httpx2 as httpx
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from kit.launch import records_of, simroute_executable, time_server

pytestmark = pytest.mark.integration

ALICE = "alice-token-0123456789abcdef"
BOB = "bob-token-0123456789abcdef00"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "0"}},
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def test_dns_rebinding_host_and_foreign_origins_are_refused(make_config, simroute_http):
    server = simroute_http(make_config(mcpServers={"time": time_server()}))
    port = server.url.split(":")[2].split("/")[0]
    rebinding = httpx.post(
        server.url, json=INITIALIZE, headers={**MCP_HEADERS, "Host": f"evil.example:{port}"}, timeout=20
    )
    assert rebinding.status_code == 421
    foreign = httpx.post(
        server.url, json=INITIALIZE, headers={**MCP_HEADERS, "Origin": "http://evil.example"}, timeout=20
    )
    assert foreign.status_code == 403
    own = httpx.post(
        server.url, json=INITIALIZE, headers={**MCP_HEADERS, "Origin": f"http://127.0.0.1:{port}"}, timeout=20
    )
    assert own.status_code == 200


def test_configured_hosts_and_origins_are_let_through_and_others_still_refused(make_config, simroute_http):
    service = {"allowed_hosts": ["mcp.internal:*"], "allowed_origins": ["https://agent.example"]}
    server = simroute_http(make_config(mcpServers={"time": time_server()}, service=service))
    port = server.url.split(":")[2].split("/")[0]

    def initialize(**headers: str) -> int:
        return httpx.post(server.url, json=INITIALIZE, headers={**MCP_HEADERS, **headers}, timeout=20).status_code

    assert initialize(Host=f"mcp.internal:{port}") == 200  # a name beyond loopback, configured
    assert initialize(Host=f"mcp.internal:{port}", Origin="https://agent.example") == 200
    assert initialize(Origin="https://agent.example") == 200
    assert initialize(Host=f"evil.example:{port}") == 421  # the others still get the rebinding answers
    assert initialize(Host=f"mcp.internal.evil.example:{port}") == 421
    assert initialize(Origin="https://evil.example") == 403
    assert initialize(Origin="http://agent.example") == 403  # another scheme is another origin


async def test_tokens_are_required_and_checked(make_config, simroute_http):
    config = make_config(mcpServers={"time": time_server()}, service={"tokens": {"alice": ALICE}})
    server = simroute_http(config)
    missing = httpx.post(server.url, json=INITIALIZE, headers=MCP_HEADERS, timeout=20)
    assert missing.status_code == 401 and missing.headers["www-authenticate"].startswith("Bearer")
    wrong = httpx.post(
        server.url, json=INITIALIZE, headers={**MCP_HEADERS, "Authorization": f"Bearer {BOB}"}, timeout=20
    )
    assert wrong.status_code == 401
    async with Client(StreamableHttpTransport(server.url, headers={"Authorization": f"Bearer {ALICE}"})) as client:
        assert "get_current_time" in {t.name for t in await client.list_tools()}
    assert [(r["policy"], r["route"]) for r in records_of(config)] == [("mcp-auth", "deny"), ("mcp-auth", "deny")]


def test_a_bind_beyond_loopback_needs_a_token(make_config):
    config = make_config(mcpServers={"time": time_server()})
    out = subprocess.run(
        [simroute_executable(), "mcp", "--config", str(config), "--http", "0.0.0.0:0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2 and "SIMROUTE_TOKEN" in out.stderr


async def test_another_token_naming_the_same_session_gets_its_own_sandbox(
    make_config, simroute_http, no_sandbox_left_behind
):
    config = make_config(shell={"pool_size": 0}, service={"tokens": {"alice": ALICE, "bob": BOB}})
    server = simroute_http(config)

    def client(token: str) -> Client:
        return Client(
            StreamableHttpTransport(
                server.url, headers={"Authorization": f"Bearer {token}", "X-Simroute-Session": "shared"}
            )
        )

    async with client(ALICE) as alice, client(BOB) as bob:
        wrote = await alice.call_tool(
            "shell_exec", {"command": "echo top-secret > /workspace/note.txt && cat /workspace/note.txt"}
        )
        assert wrote.structured_content["output"].strip() == "top-secret"
        read = await bob.call_tool(
            "shell_exec", {"command": "cat /workspace/note.txt; ls /workspace"}, raise_on_error=False
        )
        assert (
            "top-secret" not in read.structured_content["output"]
            and "No such file" in read.structured_content["output"]
        )
    server.process.terminate()
    assert server.process.wait(30) == 0
    assert [r["session"] for r in records_of(config)] == ["alice/shared", "bob/shared"]
    assert "alice/shared" not in server.log.read_text()  # session ids are not logged whole
