"""Rehearsal with `on_divert: fork` on a stdio MCP server whose state is local, through
`simroute mcp --http` as a user launches it, with the real mcp-server-git and
`state: [<repository>]`: the destructive calls (a reset of the index, a checkout) run
on a second instance of the server in its own mount and network namespace, over a copy
of the repository bound at the same path (the server's own path check passes
unchanged); the session's later reads see the fork; the real repository's HEAD, index
and branches are unchanged; the fork's process and copy are gone once the session is
reaped. One router for the module."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from kit.launch import meta_of, write_config
from kit.serve import parsed
from kit.transparency import simroute_http

pytestmark = pytest.mark.integration

IDLE_TTL_S = 2.0


def git(repo: Path, *argv: str) -> str:
    return subprocess.run(["git", *argv], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


def real_state(repo: Path) -> tuple[str, str, str, str]:
    """HEAD's branch and commit, the staged files and the branches of the real repository."""
    return (
        git(repo, "rev-parse", "--abbrev-ref", "HEAD"),
        git(repo, "rev-parse", "HEAD"),
        git(repo, "diff", "--cached", "--name-only"),
        git(repo, "branch", "--format=%(refname:short)"),
    )


def server_pids(repo: Path) -> set[int]:
    """The processes of mcp-server-git serving `repo` (the real upstreams and the forks)."""
    found = subprocess.run(
        ["pgrep", "-f", f"mcp_server_git --repository {repo}"], capture_output=True, text=True
    ).stdout
    return {int(pid) for pid in found.split()}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, Path]]:
    folder = tmp_path_factory.mktemp("mcp-fork")
    repo, copies = folder / "repo", folder / "copies"
    copies.mkdir()
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    for name, value in (("user.name", "Test"), ("user.email", "test@example.com")):
        git(repo, "config", name, value)
    (repo / "a.txt").write_text("one\n")
    git(repo, "add", "a.txt")
    git(repo, "commit", "-q", "-m", "first")
    git(repo, "branch", "feature")
    (repo / "b.txt").write_text("staged\n")
    git(repo, "add", "b.txt")  # a staged change: what a reset would lose
    spec = {
        "command": sys.executable,
        "args": ["-m", "mcp_server_git", "--repository", str(repo)],
        "state": [str(repo)],
    }
    config = write_config(
        folder,
        mode="rehearsal",
        rehearsal={"on_divert": "fork"},
        mcpServers={"git": spec},
        sessions={"idle_ttl_s": IDLE_TTL_S},
        world_model={"engine": "openai", "url": "http://127.0.0.1:9/v1", "model": "none", "deadline_s": 5},
    )
    before = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = str(copies)  # where the router makes its forks' copies (tempfile)
    try:
        with simroute_http(config, folder / "simroute.log") as url:
            yield url, repo, copies
    finally:
        if before is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = before


async def metric(url: str, name: str) -> float:
    import httpx2 as httpx

    async with httpx.AsyncClient(timeout=10) as http:
        text = (await http.get(url.replace("/mcp", "/metrics"))).text
    return parsed(text).get((name, ()), 0.0)


async def call(client: Client, tool: str, **arguments) -> tuple[dict, str]:
    result = await client.call_tool(tool, arguments, raise_on_error=False)
    return meta_of(result), "".join(getattr(block, "text", "") for block in result.content)


async def test_destructive_git_calls_run_on_a_fork_and_the_real_repository_is_unchanged(server):
    url, repo, copies = server
    real_before = real_state(repo)
    assert real_before[0] == "main" and real_before[2] == "b.txt"
    pids_before = server_pids(repo)
    transport = StreamableHttpTransport(url, headers={"X-Simroute-Session": "rehearsal-git"})
    async with Client(transport, timeout=60) as client:
        meta, text = await call(client, "git_reset", repo_path=str(repo))
        assert (meta["route"], meta["provenance"], meta["policy"], meta["safety_class"]) == (
            "fork",
            "fork",
            "rehearsal",
            "destructive",
        )
        assert text == "All staged changes reset"  # the real server's answer, on the copy
        fork = meta["source"]["fork"]
        assert fork["call"] == 1 and fork["server"] == "git" and fork["copied"]["paths"][str(repo)] > 0
        meta, text = await call(client, "git_checkout", repo_path=str(repo), branch_name="feature")
        assert (meta["provenance"], meta["source"]["fork"]["id"], meta["source"]["fork"]["call"]) == (
            "fork",
            fork["id"],
            2,
        )
        meta, text = await call(client, "git_status", repo_path=str(repo))  # a read: on the fork too
        assert meta["provenance"] == "fork" and "On branch feature" in text and "b.txt" in text
        assert "Changes to be committed" not in text  # the fork's index was reset
        assert real_state(repo) == real_before  # HEAD, the staged change and the branches: untouched
        assert len(list(copies.iterdir())) == 1  # the fork's copy
        forked = server_pids(repo) - pids_before
        assert forked, "no fork of the server was running"
        assert await metric(url, "simroute_mcp_forks") == 1
    # The idle session is reaped, and its fork with it: its process, its namespace, its copy.
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and (server_pids(repo) & forked or any(copies.iterdir())):
        await asyncio.sleep(0.2)
    assert not server_pids(repo) & forked and not any(copies.iterdir()), "the fork outlived its session"
    assert real_state(repo) == real_before
    assert await metric(url, "simroute_mcp_forks") == 0 and await metric(url, "simroute_mcp_forks_made_total") == 1
