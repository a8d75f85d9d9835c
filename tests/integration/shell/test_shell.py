"""The shell channel through `simroute mcp` (stdio) with a real MCP client and
the real Docker engine: persistence, deadlines, truncation, hardening, the pool,
cleanup, bad input."""

from __future__ import annotations

import asyncio
import os
import time

import pytest
from kit.launch import meta_of, records_of, simroute_executable, stdio_client, toolbox_server
from kit.sandboxes import owner_of, sandboxes

pytestmark = pytest.mark.integration


def shell_config(make_config, **shell):
    return make_config(shell={"pool_size": 0, **shell})


async def run(client, command, **arguments):
    result = await client.call_tool("shell_exec", {"command": command, **arguments}, raise_on_error=False)
    return result, result.structured_content or {}


async def metric_reaches(url: str, name: str, value: float, *, timeout_s: float) -> bool:
    """Whether a gauge of simroute's /metrics reaches `value` within `timeout_s`."""
    import httpx2 as httpx
    from prometheus_client.parser import text_string_to_metric_families

    deadline = time.monotonic() + timeout_s
    async with httpx.AsyncClient() as http:
        while time.monotonic() < deadline:
            for family in text_string_to_metric_families((await http.get(url)).text):
                if any(sample.name == name and sample.value >= value for sample in family.samples):
                    return True
            await asyncio.sleep(0.2)
    return False


def container_id_seen_from_inside(out: dict) -> str:
    # cgroup v1 paths name the container: /docker/<id>
    for line in out["output"].splitlines():
        if "/docker/" in line:
            return line.rsplit("/docker/", 1)[1].strip()[:64]
    raise AssertionError(f"no docker cgroup in {out['output']!r}")


@pytest.fixture(autouse=True)
def _no_sandbox_left(no_sandbox_left_behind):
    yield


async def test_offered_by_default_with_schema(tmp_path):
    from kit.launch import write_config

    path = tmp_path / "simroute.yaml"
    path.write_text(f'store: {{path: "{tmp_path / "r.db"}"}}\nshell: {{pool_size: 0}}\n')
    async with stdio_client(path) as client:
        tools = {t.name: t for t in await client.list_tools()}
    assert "shell_exec" in tools
    assert tools["shell_exec"].input_schema["required"] == ["command"]
    assert set(tools["shell_exec"].output_schema["properties"]) >= {"output", "exit_code", "cwd", "timed_out"}
    disabled = write_config(tmp_path, shell={"enabled": False}, mcpServers={"toolbox": toolbox_server()})
    async with stdio_client(disabled) as client:
        assert "shell_exec" not in {t.name for t in await client.list_tools()}


async def test_cwd_env_background_jobs_and_exit_codes_persist(make_config):
    async with stdio_client(shell_config(make_config)) as client:
        result, first = await run(client, "mkdir -p src && cd src && export GREETING=hi; sleep 60 &")
        assert meta_of(result)["provenance"] == "real" and meta_of(result)["route"] == "real"
        _, out = await run(client, "pwd; echo $GREETING")
        assert out["output"].split() == ["/workspace/src", "hi"] and out["cwd"] == "/workspace/src"
        _, out = await run(client, "jobs")
        assert "sleep 60" in out["output"]
        # What a background job prints between commands shows on the next screen, as in a terminal.
        await run(client, "(sleep 0.3; echo late) &")
        await asyncio.sleep(1)
        _, out = await run(client, "echo now")
        assert out["output"].split() == ["late", "now"]
        result, out = await run(client, "grep -q nothing /etc/hostname")
        assert out["exit_code"] == 1 and not result.is_error  # a failing command is an answer, not a tool error
        _, out = await run(client, "echo 'unclosed")
        assert out["exit_code"] == 2 and "unexpected EOF" in out["output"]
        _, out = await run(client, "cat")  # reads /dev/null: does not eat the next command
        assert out["exit_code"] == 0
        result, out = await run(client, "printf 'no newline'")
        assert out["output"] == "no newline" and "exit code 0" in result.content[0].text


@pytest.mark.serial
async def test_deadline_returns_partial_output_and_the_shell_survives(make_config):
    async with stdio_client(shell_config(make_config)) as client:
        await run(client, "cd /tmp; sleep 300 &")
        await run(client, "jobs")
        started = time.monotonic()
        result, out = await run(client, "echo before; sleep 60; echo after", timeout_s=1.5)
        assert time.monotonic() - started < 10
        assert result.is_error and out["timed_out"] and out["exit_code"] is None
        assert out["output"].strip() == "before" and "1.5s" in result.content[0].text
        _, out = await run(client, "pwd; jobs")
        assert out["output"].splitlines()[0] == "/tmp"  # same shell: cwd kept
        assert "sleep 300" in out["output"] and "reset" not in out  # the earlier job lives on
        # A busy loop in the shell itself cannot be killed without the shell: restarted, said so.
        _, out = await run(client, "while :; do :; done", timeout_s=1)
        assert out["timed_out"]
        result, out = await run(client, "echo next")
        assert out["output"].strip() == "next" and "restarted" in out["reset"]


async def test_output_is_trimmed_like_a_screen(make_config):
    async with stdio_client(shell_config(make_config, screen_lines=40, screen_chars=4000)) as client:
        _, out = await run(client, "seq 1 100000")
        assert out["truncated"] and out["exit_code"] == 0
        lines = out["output"].splitlines()
        assert lines[0] == "1" and lines[-1] == "100000" and any("omitted" in line for line in lines)
        assert len(lines) <= 41
        # A flood that never ends: bounded, stopped at the deadline, next call fine.
        result, out = await run(client, "yes flood", timeout_s=2)
        assert out["timed_out"] and out["truncated"] and len(out["output"]) <= 4200
        _, out = await run(client, "echo calm")
        assert out["output"].strip() == "calm"


@pytest.mark.serial
async def test_hardening_each_property_resists_a_command_that_tries_to_break_it(make_config):
    async with stdio_client(shell_config(make_config)) as client:
        _, out = await run(client, "id -u; id -un")
        assert out["output"].split() == ["1000", "agent"]  # not root
        _, out = await run(client, "grep -E '^(CapEff|CapBnd|NoNewPrivs)' /proc/self/status")
        status = dict(line.split(":\t") for line in out["output"].splitlines())
        assert int(status["CapEff"], 16) == 0 and int(status["CapBnd"], 16) == 0 and status["NoNewPrivs"] == "1"
        _, out = await run(
            client,
            "touch /etc/owned; touch /usr/bin/owned; "
            "echo ok > /workspace/mine && cat /workspace/mine && echo tmp > /tmp/t",
        )
        assert out["output"].count("Read-only file system") == 2 and "ok" in out["output"] and out["exit_code"] == 0
        _, out = await run(client, "python3 -c \"import socket; socket.create_connection(('1.1.1.1', 53), timeout=3)\"")
        assert out["exit_code"] != 0 and "Network is unreachable" in out["output"]
        _, out = await run(client, 'python3 -c "b = bytearray(2 * 1024**3)"', timeout_s=30)
        assert out["exit_code"] in (1, 137)  # MemoryError or the OOM killer: the 512m limit holds
        _, out = await run(
            client,
            "cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us /sys/fs/cgroup/pids/pids.max 2>/dev/null "
            "|| cat /sys/fs/cgroup/cpu.max /sys/fs/cgroup/pids.max",
        )
        assert "100000" in out["output"] and "256" in out["output"]  # 1 CPU, 256 pids
        # A fork bomb: contained by the pids limit, noticed by the process count (not by
        # the sandbox ceasing to answer), the sandbox replaced; the next call works at once.
        _, out = await run(client, "echo before > /workspace/marker; :(){ :|:& };:", timeout_s=5)
        assert not out["timed_out"]
        started = time.monotonic()
        _, out2 = await run(client, "echo survived; ls /workspace", timeout_s=20)
        assert time.monotonic() - started < 10
        assert out2["output"].split() == ["survived"] and out2["exit_code"] == 0  # a fresh sandbox: the marker is gone
        assert "process limit (256)" in out2["reset"] and "replaced" in out2["reset"]
        _, out3 = await run(client, "echo fine")
        assert out3["output"].strip() == "fine" and out3["exit_code"] == 0 and "reset" not in out3


async def test_killing_the_shell_gives_a_fresh_one_marked_reset(make_config, tmp_path):
    async with stdio_client(shell_config(make_config)) as client:
        await run(client, "echo kept > /workspace/file")
        result, out = await run(client, "kill -9 $$")
        assert result.is_error and "shell exited" in out["error"]
        result, out = await run(client, "cat /workspace/file; pwd")
        assert out["output"].split() == ["kept", "/workspace"] and "exited" in out["reset"]
        _, out = await run(client, "exit 7")
        _, out = await run(client, "echo again")
        assert out["output"].strip() == "again" and out["reset"]
    resets = [(r["observation"]["structured"] or {}).get("reset") for r in records_of(tmp_path / "simroute.yaml")]
    assert "the previous shell exited" in resets


async def test_sessions_get_their_own_sandbox_from_the_warm_pool(make_config, simroute_http):
    from fastmcp import Client
    from fastmcp.client.transports import StreamableHttpTransport

    server = simroute_http(make_config(shell={"pool_size": 2}))
    owners = {owner_of(server.process.pid)}
    # Ready, not only started: a container still bootstrapping its shell is not in the pool yet.
    assert await metric_reaches(server.url.replace("/mcp", "/metrics"), "simroute_shell_pool_ready", 2, timeout_s=60)
    pooled = {c.id for c in sandboxes(owners)}
    assert len(pooled) == 2

    def agent(name):
        return Client(StreamableHttpTransport(server.url, headers={"X-Simroute-Session": name}))

    seen = {}
    for name in ("agent-a", "agent-b"):
        async with agent(name) as client:
            await run(client, f"echo {name} > /workspace/who")
            _, out = await run(client, "cat /proc/1/cgroup")
            seen[name] = container_id_seen_from_inside(out)
    assert seen["agent-a"] != seen["agent-b"] and set(seen.values()) <= pooled  # no docker run for either
    async with agent("agent-a") as client:  # the same session gets its own sandbox back
        _, out = await run(client, "cat /workspace/who")
        assert out["output"].strip() == "agent-a"
    # The pool refills for the next sessions.
    assert await metric_reaches(server.url.replace("/mcp", "/metrics"), "simroute_shell_pool_ready", 2, timeout_s=60)
    assert len(sandboxes(owners)) == 4
    server.process.terminate()
    server.process.wait(30)
    assert not sandboxes(owners), "stopping the router removes its sandboxes"


async def test_idle_session_ttl_removes_its_sandbox(make_config, routers):
    config = make_config(shell={"pool_size": 0}, sessions={"idle_ttl_s": 1.5})
    async with stdio_client(config) as client:
        await run(client, "true")
        assert len(routers.sandboxes()) == 1
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and routers.sandboxes():
            time.sleep(0.2)
        assert not routers.sandboxes(), "the idle session's sandbox is removed"
        _, out = await run(client, "echo back")  # a new session, a new sandbox
        assert out["output"].strip() == "back"


async def test_a_workspace_folder_is_the_sessions_initial_state(make_config, tmp_path):
    folder = tmp_path / "project"
    (folder / "src").mkdir(parents=True)
    (folder / "README.md").write_text("# Project\n")
    (folder / "src" / "main.py").write_text("print('hello from the workspace')\n")
    async with stdio_client(shell_config(make_config, workspace=str(folder), pool_size=1)) as client:
        _, out = await run(client, "cat README.md && python3 src/main.py && stat -c %U src/main.py")
        assert out["output"].split("\n")[:3] == ["# Project", "hello from the workspace", "agent"]


async def test_without_docker_the_real_route_says_what_is_missing(make_config):
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport

    env = {**os.environ, "DOCKER_HOST": "unix:///nonexistent/docker.sock"}
    transport = StdioTransport(
        simroute_executable(), ["mcp", "--config", str(shell_config(make_config))], env=env, keep_alive=False
    )
    async with Client(transport) as client:
        result, _ = await run(client, "echo hi")
    assert result.is_error and meta_of(result)["provenance"] == "none"
    assert "Docker" in result.content[0].text


async def test_a_fork_bomb_in_one_session_leaves_other_sessions_working(make_config, simroute_http):
    from fastmcp import Client
    from fastmcp.client.transports import StreamableHttpTransport

    server = simroute_http(make_config(shell={"pool_size": 0}))

    def agent(name):
        return Client(StreamableHttpTransport(server.url, headers={"X-Simroute-Session": name}))

    async with agent("calm") as calm, agent("bomber") as bomber:
        await run(calm, "echo steady > state")
        await run(bomber, ":(){ :|:& };:", timeout_s=5)
        _, out = await run(calm, "cat state; echo $((6 * 7))", timeout_s=20)
        assert out["output"].split() == ["steady", "42"] and "reset" not in out
        _, out = await run(bomber, "echo recovered", timeout_s=30)
        assert out["output"].strip() == "recovered" and "process limit" in out["reset"]
