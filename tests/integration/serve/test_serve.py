"""`simroute serve`: every channel from one process, launched as a user launches it.
An agent's MCP calls and its proxied HTTP requests share one runtime and, named by
the same X-Simroute-Session, one agent session."""

from __future__ import annotations

import os
import socket
import subprocess

import httpx2 as httpx
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from kit.http import http_config
from kit.launch import meta_of, records_of, simroute_executable, time_server
from servers.http_upstream import serve_upstream

from router.cli.launch import free_port, wait_for_port

pytestmark = pytest.mark.integration


def start_serve(config, mcp_port: int, proxy_port: int) -> subprocess.Popen:
    log = config.parent / f"serve-{mcp_port}.log"
    process = subprocess.Popen(
        [
            simroute_executable(),
            "serve",
            "--config",
            str(config),
            "--mcp",
            f"127.0.0.1:{mcp_port}",
            "--http-proxy",
            str(proxy_port),
        ],
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    wait_for_port(mcp_port, process, describe=log.read_text)
    wait_for_port(proxy_port, process, describe=log.read_text)
    return process


async def test_mcp_and_http_channels_share_one_process_and_the_agent_session(tmp_path):
    config = http_config(tmp_path, mcpServers={"time": time_server()})
    mcp_port, proxy_port = free_port(), free_port()
    process = start_serve(config, mcp_port, proxy_port)
    try:
        with serve_upstream() as upstream:
            headers = {"X-Simroute-Session": "agent-7"}
            async with Client(StreamableHttpTransport(f"http://127.0.0.1:{mcp_port}/mcp", headers=headers)) as client:
                result = await client.call_tool("get_current_time", {"timezone": "UTC"})
                assert meta_of(result)["provenance"] == "real"
            with httpx.Client(proxy=f"http://127.0.0.1:{proxy_port}", trust_env=False, timeout=30) as http:
                response = http.get(f"{upstream}/json", headers=headers)
            assert response.status_code == 200 and response.headers["x-simroute-provenance"] == "real"
    finally:
        process.terminate()
        code = process.wait(30)
    assert code == 0, (config.parent / f"serve-{mcp_port}.log").read_text()
    for port in (mcp_port, proxy_port):  # both listeners closed with the process
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=1).close()

    rows = records_of(config)
    assert [(r["session"], r["channel"], r["step"]) for r in rows] == [
        ("agent-7", "mcp", 0),
        ("agent-7", "http", 1),
    ]  # one session: steps run on
    assert [r["id"] for r in records_of(config, "--channel", "http", "--session", "agent-7")] == [rows[1]["id"]]


def test_a_taken_proxy_port_is_a_clear_error(tmp_path):
    config = http_config(tmp_path, mcpServers={"time": time_server()})
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        out = subprocess.run(
            [
                simroute_executable(),
                "serve",
                "--config",
                str(config),
                "--mcp",
                f"127.0.0.1:{free_port()}",
                "--http-proxy",
                str(port),
            ],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
    assert out.returncode == 1
    assert f"simroute: the HTTP proxy cannot listen on 127.0.0.1:{port}" in out.stderr and "Traceback" not in out.stderr


SHORT_TOKEN_ERROR = (
    "simroute: config error: SIMROUTE_TOKEN is shorter than 16 characters: "
    "use a random one (e.g. `openssl rand -hex 24`)"
)


@pytest.mark.parametrize("bind", ["127.0.0.1", "0.0.0.0"])
def test_a_short_simroute_token_is_refused_first_with_exit_status_2(tmp_path, bind):
    # Every channel on (MCP, the HTTP proxy, the shell, the browser): the refusal comes
    # before any of them starts and says anything, as for any config error.
    config = http_config(tmp_path, mcpServers={"time": time_server()})
    out = subprocess.run(
        [
            simroute_executable(),
            "serve",
            "--config",
            str(config),
            "--mcp",
            f"{bind}:{free_port()}",
            "--http-proxy",
            str(free_port()),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "SIMROUTE_TOKEN": "too-short"},
    )
    assert out.returncode == 2, out.stderr
    first, *rest = out.stderr.splitlines()
    assert first == SHORT_TOKEN_ERROR and rest == [] and out.stdout == ""


def test_check_config_refuses_a_short_simroute_token_as_serve_would(tmp_path):
    config = http_config(tmp_path, mcpServers={"time": time_server()})
    command = [simroute_executable(), "check-config", "--config", str(config)]
    refused = subprocess.run(
        command, capture_output=True, text=True, timeout=60, env={**os.environ, "SIMROUTE_TOKEN": "too-short"}
    )
    assert refused.returncode == 2 and refused.stderr.splitlines() == [SHORT_TOKEN_ERROR] and refused.stdout == ""
    accepted = subprocess.run(
        command, capture_output=True, text=True, timeout=60, env={**os.environ, "SIMROUTE_TOKEN": "x" * 16}
    )
    assert accepted.returncode == 0 and ": ok" in accepted.stdout
