"""Rehearsal with `on_divert: fork` through `simroute mcp --http` as a user launches it,
on the real Docker engine: a destructive command runs for real on a throwaway copy of
the session's sandbox, the session stays on its fork, the real sandbox keeps its files;
sessions' forks are isolated; a state over `fork.max_bytes` is simulated with the
reason said; a fork is removed with its session (idle TTL). One router for the module."""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import Iterator

import docker
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from kit.launch import meta_of, write_config
from kit.sandboxes import owner_of, sandboxes
from kit.serve import parsed
from kit.transparency import simroute_http

pytestmark = pytest.mark.integration

IDLE_TTL_S = 3.0
MAX_BYTES = 1_000_000


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, set[str]]]:
    folder = tmp_path_factory.mktemp("fork")
    config = write_config(
        folder,
        mode="rehearsal",
        rehearsal={"on_divert": "fork"},
        fork={"max_bytes": MAX_BYTES},
        shell={"enabled": True, "pool_size": 1},
        sessions={"idle_ttl_s": IDLE_TTL_S},
        # A refused fork is simulated: what the model answers does not matter here, so the
        # sim route asks a model server that is not there (its error comes at once).
        world_model={"engine": "openai", "url": "http://127.0.0.1:9/v1", "model": "none", "deadline_s": 5},
    )
    with simroute_http(config, folder / "simroute.log") as url:
        pids = subprocess.run(["pgrep", "-f", str(config)], capture_output=True, text=True).stdout.split()
        owners = {owner for pid in pids if (owner := owner_of(int(pid))) is not None}
        yield url, owners
    deadline = time.monotonic() + 15
    while sandboxes(owners) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not sandboxes(owners), "a sandbox or a fork was left behind"


def agent(url: str, name: str) -> Client:
    return Client(StreamableHttpTransport(url, headers={"X-Simroute-Session": name}), timeout=120)


async def run(client: Client, command: str) -> tuple[dict, dict]:
    result = await client.call_tool("shell_exec", {"command": command}, raise_on_error=False)
    return meta_of(result), result.structured_content or {}


def in_container(container_id: str, command: str) -> str:
    result = docker.from_env().containers.get(container_id).exec_run(["bash", "-c", command], user="1000:1000")
    return result.output.decode()


def container_named(name: str) -> str:
    return docker.from_env().containers.get(name).id


async def metric(url: str, name: str) -> float:
    import httpx2 as httpx

    async with httpx.AsyncClient(timeout=10) as http:
        text = (await http.get(url.replace("/mcp", "/metrics"))).text
    return parsed(text).get((name, ()), 0.0)


async def test_a_rehearsed_rm_runs_on_a_fork_and_the_real_sandbox_keeps_its_files(server):
    url, owners = server
    async with agent(url, "rm-agent") as client:
        meta, out = await run(
            client, "mkdir -p data/sub && echo precious > data/keep.txt && export STAGE=rehearsal && cd data/sub"
        )
        assert meta["provenance"] == "real" and out["exit_code"] == 0
        meta, out = await run(client, "cd /workspace && rm -rf data/ && echo removed")
        assert (meta["route"], meta["provenance"], meta["policy"], meta["safety_class"]) == (
            "fork",
            "fork",
            "rehearsal",
            "destructive",
        )
        assert out["exit_code"] == 0 and out["output"].strip() == "removed"  # the real program's answer: it succeeded
        fork = meta["source"]["fork"]
        assert fork["from"] == "session sandbox" and fork["copied"]["cwd"] == "/workspace/data/sub"
        assert fork["copied"]["folders"]["/workspace"] > 0 and fork["copied"]["variables"] > 0
        meta, out = await run(client, 'ls data; echo "$STAGE"')  # a read: on the fork too, where data/ is gone
        assert (meta["route"], meta["provenance"]) == ("fork", "fork") and "stays on its fork" in meta["reason"]
        assert "No such file or directory" in out["output"] and out["output"].strip().endswith("rehearsal")
        assert meta["source"]["fork"]["id"] == fork["id"]
        assert await metric(url, "simroute_shell_forks") >= 1
        # The real sandbox still holds data/: read in each of the router's other containers.
        fork_id = container_named(fork["container"])
        others = [c.id for c in sandboxes(owners) if c.id != fork_id]
        assert [in_container(c, "cat /workspace/data/keep.txt 2>/dev/null") for c in others].count("precious\n") == 1
        assert in_container(fork_id, "ls /workspace") == ""
    # The idle session is reaped, and its fork with it.
    deadline = time.monotonic() + IDLE_TTL_S + 15
    while time.monotonic() < deadline and any(c.id == fork_id for c in sandboxes(owners)):
        await asyncio.sleep(0.2)
    assert not any(c.id == fork_id for c in sandboxes(owners)), "the fork outlived its session"
    assert await metric(url, "simroute_shell_forks") == 0 and await metric(url, "simroute_shell_forks_made_total") >= 1


async def test_two_sessions_forks_are_isolated(server):
    url, _ = server
    async with agent(url, "iso-a") as a, agent(url, "iso-b") as b:
        for name, client in (("a", a), ("b", b)):
            meta, _ = await run(client, f"echo {name} > who")
            assert meta["provenance"] == "real"
        forks = {}
        for name, client in (("a", a), ("b", b)):
            meta, out = await run(client, f"rm -rf who && echo {name}-forked > who && cat who")
            assert meta["provenance"] == "fork" and out["output"].strip() == f"{name}-forked"
            forks[name] = meta["source"]["fork"]["container"]
        assert forks["a"] != forks["b"]
        for name, client in (("a", a), ("b", b)):
            _, out = await run(client, "cat who")
            assert out["output"].strip() == f"{name}-forked"


async def test_a_state_over_max_bytes_is_simulated_with_the_reason(server):
    url, _ = server
    async with agent(url, "big-agent") as client:
        meta, out = await run(client, f"head -c {2 * MAX_BYTES} /dev/urandom > big.bin && echo written")
        assert meta["provenance"] == "real" and out["output"].strip() == "written"
        meta, _ = await run(client, "rm -rf big.bin")
        assert meta["route"] == "fork" and meta["provenance"] != "fork"
        assert "not forked" in meta["note"] and "fork.max_bytes" in meta["note"] and "simulated instead" in meta["note"]
        meta, _ = await run(client, "ls -la")  # the session stays diverted; its fork stays refused
        assert meta["route"] == "fork" and "refused at this session's first fork" in meta["note"]
        assert await metric(url, "simroute_shell_forks_refused_total") >= 1
