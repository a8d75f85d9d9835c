"""Shell sandboxes never outlive what they belong to: an MCP client ending its
stdio session (the official SDK's client and fastmcp's), SIGTERM and SIGKILL
with the pool refilling, a session closed while its sandbox starts, a failed
preparation; and the reaper removes only simroute's sandboxes of gone owners.

Every assertion is about the sandboxes of the routers a test started (their
owner label), not global counts: other Docker work may run beside these tests."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager

import docker
import pytest
from kit.launch import meta_of, records_of, simroute_executable, stdio_client, write_config
from kit.sandboxes import OWNER_LABEL, owner_of, sandboxes

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("no_sandbox_left_behind")]

IMAGE = "simroute-sandbox:latest"
GONE_WITHIN_S = 2.0  # after the client returns: the engine's removal, not a later start's reaper


def wait_until_gone(owners: set[str], within_s: float) -> list:
    deadline = time.monotonic() + within_s
    while (left := sandboxes(owners)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def wait_for_count(owners: set[str], count: int, within_s: float = 60) -> None:
    deadline = time.monotonic() + within_s
    while len(sandboxes(owners)) < count and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(sandboxes(owners)) >= count, f"expected {count} sandboxes of {owners}"


def wait_for_running(owners: set[str], within_s: float = 60) -> None:
    deadline = time.monotonic() + within_s
    while any(c.status != "running" for c in sandboxes(owners)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert all(c.status == "running" for c in sandboxes(owners)), f"sandboxes of {owners} not running"


async def test_the_official_sdk_client_ending_its_session_leaves_no_sandbox(tmp_path, routers):
    from kit.launch import _child_environment
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters
    from mcp.client.stdio import stdio_client as sdk_stdio_client

    config = write_config(tmp_path, shell={"pool_size": 2})
    parameters = StdioServerParameters(
        command=simroute_executable(), args=["mcp", "--config", str(config)], env=_child_environment()
    )
    async with sdk_stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        wait_for_count(routers.owners, 2)  # the pool is full
        result = await session.call_tool("shell_exec", {"command": "echo from the pool; sleep 300 &"})
        assert "from the pool" in result.content[0].text
        # Taking one started a refill (`docker run` in flight); the agent leaves now.
        owners = set(routers.owners)
        assert sandboxes(owners)
    left = wait_until_gone(owners, GONE_WITHIN_S)
    assert not left, f"sandboxes outlived the session: {[c.status for c in left]}"


async def test_fastmcp_client_ending_its_session_leaves_no_sandbox(make_config, routers):
    async with stdio_client(make_config(shell={"pool_size": 2})) as client:
        wait_for_count(routers.owners, 2)
        result = await client.call_tool("shell_exec", {"command": "sleep 300 & echo started"})
        assert result.structured_content["output"].strip() == "started"
        owners = set(routers.owners)
    assert not wait_until_gone(owners, GONE_WITHIN_S)


@contextmanager
def router(config) -> Iterator[subprocess.Popen]:
    """`simroute mcp` on stdio with no client speaking yet; killed at the end if still running."""
    process = subprocess.Popen(
        [simroute_executable(), "mcp", "--config", str(config)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_a_router_stopped_by_sigterm_mid_refill_leaves_no_sandbox(make_config):
    with router(make_config(shell={"pool_size": 3})) as process:
        owners = {owner_of(process.pid)}
        wait_for_count(owners, 1)  # the pool is filling: the next `docker run` is in flight
        process.send_signal(signal.SIGTERM)
        assert process.wait(5) == 0  # and it exits, though the client's stdin is still open
    assert not wait_until_gone(owners, 1), "a sandbox outlived its router"


def test_a_killed_router_leaves_no_sandbox(make_config):
    """SIGKILL: the router can do nothing, and still its sandboxes go with it
    (each is tied to its owner's life by the engine). Killed mid-`docker run`,
    a container created but never started can remain: the next start reaps it
    (test_the_reaper_removes_only_simroute_sandboxes_of_gone_owners)."""
    with router(make_config(shell={"pool_size": 2})) as process:
        owners = {owner_of(process.pid)}
        wait_for_count(owners, 2)
        time.sleep(1)  # the pool is full and idle
        os.kill(process.pid, signal.SIGKILL)
        process.wait(10)
    assert not wait_until_gone(owners, GONE_WITHIN_S), "a killed router's sandboxes are removed by the engine"


async def test_a_failed_preparation_removes_its_sandbox_and_says_why(make_config, tmp_path, routers):
    workspace = tmp_path / "workspace"
    workspace.symlink_to(tmp_path / "deleted-project")  # dangling: the copy into the sandbox fails
    config = make_config(shell={"pool_size": 0, "workspace": str(workspace)})
    async with stdio_client(config) as client:
        result = await client.call_tool("shell_exec", {"command": "ls"}, raise_on_error=False)
        text = result.content[0].text
        assert result.is_error and meta_of(result)["provenance"] == "none"
        assert "could not be prepared" in text and str(workspace) in text and "No such file or directory" in text
        # Removed at once: gone, or (the Docker engine being slower than the answer) being removed.
        left = [c for c in routers.sandboxes() if c.status != "removing"]
        assert not left, "the sandbox whose preparation failed was removed at once"
        # The next call tries again, and says the same.
        again = await client.call_tool("shell_exec", {"command": "ls"}, raise_on_error=False)
        assert again.is_error and "could not be prepared" in again.content[0].text
    records = records_of(config)
    assert [r["observation"]["is_error"] for r in records] == [True, True]
    assert "could not be prepared" in records[0]["observation"]["content"][0]["text"]


async def test_a_session_closed_while_its_sandbox_starts_leaves_none(tmp_path):
    # A big workspace makes the start slow; the session (an episode, in process) is
    # closed meanwhile, as a trainer closes an episode mid-step. (The idle reaper does
    # not close a session whose call is still running.)
    import asyncio
    import json

    from router.config import parse_config
    from router.episodes.host import EpisodeHost
    from router.mcp.server import build_server
    from router.runtime.runtime import Runtime

    workspace = tmp_path / "big"
    workspace.mkdir()
    (workspace / "data.bin").write_bytes(os.urandom(64 * 1024 * 1024))
    config = parse_config(
        json.dumps(
            {
                "store": {"path": str(tmp_path / "records.db")},
                "shell": {"pool_size": 0, "workspace": str(workspace)},
                "browser": {"enabled": False},
                "http": {"ca_dir": str(tmp_path / "ca")},
            }
        )
    )
    runtime = Runtime(config)
    host = EpisodeHost(runtime.episode_parts, build_server(runtime.mcp_parts))
    await runtime.start()
    try:
        episode = await host.reset(options={"route": "real"})
        step = asyncio.create_task(
            host.step(episode, {"type": "call_tool", "tool_name": "shell_exec", "arguments": {"command": "ls"}})
        )
        owners = {owner_of(os.getpid())}
        deadline = time.monotonic() + 30
        while not sandboxes(owners) and time.monotonic() < deadline:  # its container runs; the 64 MB copy goes on
            await asyncio.sleep(0.02)
        assert not step.done()
        await host.close(episode)
        result = (await step)["observation"]["result"]
        assert result["isError"] and "session closed while its sandbox was starting" in json.dumps(result)
        # The router still runs: its closed session's sandbox is gone, not kept until it stops.
        assert not wait_until_gone(owners, 5)
    finally:
        await runtime.aclose()


def test_the_reaper_removes_only_simroute_sandboxes_of_gone_owners(make_config):
    engine = docker.from_env()
    gone = subprocess.Popen(["sleep", "30"])
    gone_owner = owner_of(gone.pid)
    gone.kill()
    gone.wait()
    started = []
    try:

        def container(labels):
            started.append(
                engine.containers.run(IMAGE, ["sleep", "120"], detach=True, network_mode="none", labels=labels)
            )
            return started[-1]

        orphan = container({OWNER_LABEL: gone_owner})
        not_simroutes = container({})  # started from the same image by someone else
        other_host = container({OWNER_LABEL: "another-host:1234:5678"})
        unreadable = container({OWNER_LABEL: "not an owner"})
        with router(make_config(shell={"pool_size": 1})) as process:
            owners = {owner_of(process.pid)}
            wait_for_count(owners, 1)  # started, so the reaper has run
            # Running before the router is killed: a sandbox still being created when its
            # router dies is the next start's to reap (test_a_killed_router_leaves_no_sandbox).
            wait_for_running(owners)
        remaining = {c.id for c in engine.containers.list(all=True)}
        assert orphan.id not in remaining
        assert {not_simroutes.id, other_host.id, unreadable.id} <= remaining
    finally:
        for c in started:
            try:
                c.remove(force=True)
            except docker.errors.NotFound:
                pass


async def test_a_sandbox_that_cannot_be_had_is_said_without_a_traceback_in_the_log(tmp_path, routers):
    # simroute's own answer (provenance none), as a result: not an exception logged with
    # its traceback once per call by `simroute serve`.
    from fastmcp import Client
    from fastmcp.client.transports import StreamableHttpTransport
    from kit.serve import serving

    workspace = tmp_path / "workspace"
    workspace.symlink_to(tmp_path / "deleted-project")  # dangling: the copy into the sandbox fails
    config = write_config(tmp_path, mode="real", shell={"enabled": True, "pool_size": 0, "workspace": str(workspace)})
    log = tmp_path / "serve.log"
    with serving(config, log) as port:
        async with Client(StreamableHttpTransport(f"http://127.0.0.1:{port}/mcp"), timeout=120) as client:
            results = [await client.call_tool("shell_exec", {"command": "ls"}, raise_on_error=False) for _ in range(3)]
    for result in results:
        assert (
            result.is_error
            and meta_of(result)["provenance"] == "none"
            and "could not be prepared" in result.content[0].text
        )
    assert "Traceback" not in log.read_text() and not routers.sandboxes()
    assert [(r["provenance"], r["observation"]["is_error"]) for r in records_of(config)] == [("none", True)] * 3
