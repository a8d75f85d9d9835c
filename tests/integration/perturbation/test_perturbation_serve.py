"""Seeded perturbations through `simroute serve`, launched as a user launches it: each
channel's real error shape (MCP `isError`, HTTP status with `Retry-After`, a shell
command's exit code), a faulted write that never reaches the upstream (its own state
shows it), and a perturbed answer never replayed afterwards."""

from __future__ import annotations

import json
import subprocess

import httpx2 as httpx
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from kit.launch import free_port, meta_of, records_of, simroute_executable, toolbox_server
from kit.mcp import call_tool
from kit.serve import serving

pytestmark = pytest.mark.integration

PLAN = {
    "seed": 3,
    "rules": [
        {"name": "writes-down", "kind": "error", "match": {"channel": "mcp", "tool": "add_funds"}},
        {"name": "first-echo-empty", "kind": "empty", "at_steps": [0], "match": {"channel": "mcp", "tool": "echo"}},
        {"name": "echo-limit", "kind": "rate_limit", "limit": 2, "match": {"channel": "mcp", "tool": "echo"}},
        {
            "name": "posts-down",
            "kind": "error",
            "status": 503,
            "retry_after_s": 7,
            "match": {"channel": "http", "method": "POST"},
        },
        {
            "name": "json-limit",
            "kind": "rate_limit",
            "limit": 1,
            "retry_after_s": 2,
            "match": {"channel": "http", "path": "/json"},
        },
        {"name": "json-cut", "kind": "truncate", "keep": 0.5, "match": {"channel": "http", "path": "/json"}},
        {"name": "no-touch", "kind": "error", "exit_code": 2, "match": {"channel": "shell", "command": "touch *"}},
    ],
}


def mcp_client(port: int) -> Client:
    return Client(StreamableHttpTransport(f"http://127.0.0.1:{port}/mcp"), timeout=180)


async def test_mcp_faults_are_is_error_results_a_faulted_write_never_reaches_the_upstream_and_is_not_replayed(
    make_config, tmp_path
):
    balance = tmp_path / "balance"
    balance.write_text("10")
    # mode replay, record_mode new_episodes: a call with no recording goes real and is recorded.
    config = make_config(
        mode="replay",
        mcpServers={"toolbox": toolbox_server(TOOLBOX_BALANCE=str(balance))},
        perturbations={"apply": "chaos", "plans": {"chaos": PLAN}},
    )
    with serving(config, tmp_path / "serve.log") as port:
        async with mcp_client(port) as client:
            emptied, text, structured = await call_tool(client, "echo", text="hello")  # step 0: emptied
            assert not emptied.is_error and text == "" and meta_of(emptied)["perturbation"]["kind"] == "empty"
            assert meta_of(emptied)["provenance"] == "none"
            failed, text, _ = await call_tool(client, "add_funds", amount=5)
            assert failed.is_error and text == "Error executing tool add_funds: 503 Service Unavailable"
            assert meta_of(failed)["perturbation"] == {"kind": "error", "rule": "chaos:writes-down", "seed": 3, "n": 1}
            assert balance.read_text() == "10"  # the upstream's own state: the write never reached it
            _, text, _ = await call_tool(client, "get_balance")
            assert text == "balance 10"
            second, text, _ = await call_tool(client, "echo", text="again")
            assert not second.is_error and text == "again"
            limited, text, _ = await call_tool(client, "echo", text="third")
            assert (
                limited.is_error
                and text.startswith("Rate limit exceeded for echo")
                and meta_of(limited)["perturbation"]["n"] == 3
            )
        async with mcp_client(
            port
        ) as client:  # a new session: its echo at step 1 is not perturbed, and replays nothing perturbed
            await call_tool(client, "get_balance")
            replayed, text, _ = await call_tool(client, "echo", text="hello")
            assert (
                text == "hello"
                and meta_of(replayed)["provenance"] == "real"
                and "perturbation" not in meta_of(replayed)
            )
            assert "answered by none" in meta_of(replayed)["note"]
    rows = {(row["tool"], row["step"], row["session"]): row for row in records_of(config)}
    first_echo = next(row for (tool, step, _), row in rows.items() if tool == "echo" and step == 0)
    assert (
        first_echo["unperturbed"]["content"][0]["text"] == "hello"
        and first_echo["observation"]["content"][0]["text"] == ""
    )
    add = next(row for (tool, _, _), row in rows.items() if tool == "add_funds")
    assert add["provenance"] == "none" and "not sent to the replay side" in add["note"]
    listing = subprocess.run(
        [simroute_executable(), "records", "--config", str(config)], capture_output=True, text=True, check=True
    )
    assert "perturbed error (chaos:writes-down, call 1)" in listing.stdout


async def test_http_faults_carry_the_status_and_retry_after_and_a_faulted_post_never_reaches_the_upstream(
    make_config, tmp_path, upstream
):
    config = make_config(perturbations={"apply": "chaos", "plans": {"chaos": PLAN}})
    proxy = free_port()
    with serving(config, tmp_path / "serve.log", http_port=proxy):
        headers = {"X-Simroute-Session": "http-agent"}
        with httpx.Client(proxy=f"http://127.0.0.1:{proxy}", timeout=30, headers=headers) as http:
            before = http.get(f"{upstream}/echo").json()["served"]
            posted = http.post(f"{upstream}/echo", json={"order": 1})
            assert posted.status_code == 503 and posted.headers["Retry-After"] == "7"
            assert posted.json() == {"error": {"code": 503, "message": "Service Unavailable"}}
            assert json.loads(posted.headers["X-Simroute-Perturbation"])["rule"] == "chaos:posts-down"
            after = http.get(f"{upstream}/echo").json()["served"]
            assert after == before + 1  # the upstream's own counter: the POST never reached it
            cut = http.get(f"{upstream}/json")  # the real answer, its list cut to half
            assert cut.status_code == 200 and cut.json() == {"ok": True, "items": [1]}
            assert json.loads(cut.headers["X-Simroute-Perturbation"])["kind"] == "truncate"
            limited = http.get(f"{upstream}/json")
            assert (
                limited.status_code == 429
                and limited.headers["Retry-After"] == "2"
                and limited.headers["X-RateLimit-Remaining"] == "0"
            )
            assert limited.headers["X-Simroute-Provenance"] == "none"


async def test_a_faulted_shell_command_exits_non_zero_and_never_runs_in_the_sandbox(make_config, tmp_path):
    config = make_config(
        shell={"enabled": True, "pool_size": 0}, perturbations={"apply": "chaos", "plans": {"chaos": PLAN}}
    )
    with serving(config, tmp_path / "serve.log") as port:
        async with mcp_client(port) as client:
            _, _, made = await call_tool(client, "shell_exec", command="cd /workspace && echo hi")
            assert made["exit_code"] == 0
            faulted, text, structured = await call_tool(client, "shell_exec", command="touch made-by-agent.txt")
            assert structured["exit_code"] == 2 and "touch: Resource temporarily unavailable" in structured["output"]
            assert structured["cwd"] == "/workspace" and meta_of(faulted)["perturbation"]["rule"] == "chaos:no-touch"
            _, _, listed = await call_tool(client, "shell_exec", command="ls -a /workspace")
            assert listed["exit_code"] == 0 and "made-by-agent.txt" not in listed["output"]  # the sandbox's own state
