"""Sequence-aligned replay on a renamed repository, against the real mcp-server-git:
a session recorded on repository A through the engine, then the same calls on B
simulated, each answered from A's recording with B's values written in. Checked on
what the agent is served: B's real answers, hashes and dates aside."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from kit.engine import make_engine

from backends.alignment import AlignedReplay
from calls import Call, Observation, Provenance, Route, Session
from policies.chain import default_policies

pytestmark = pytest.mark.integration

_VOLATILE = re.compile(r"\b[0-9a-f]{7,40}\b|\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}[+-]\d{2}:\d{2}")


def repository(path: Path, untracked: str) -> Path:
    path.mkdir(parents=True)
    for argv in (
        ["init", "-q", "-b", "main"],
        ["config", "user.name", "Test"],
        ["config", "user.email", "test@example.com"],
    ):
        subprocess.run(["git", *argv], cwd=path, check=True)
    (path / "README.md").write_text("# project\n")
    subprocess.run(["git", "add", "."], cwd=path, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "Initial commit"], cwd=path, check=True)
    (path / untracked).write_text("remember\n")
    return path


def workload(repo: Path, untracked: str, message: str) -> list[tuple[str, dict[str, Any]]]:
    path = {"repo_path": str(repo)}
    return [
        ("git_status", path),
        ("git_add", {**path, "files": [untracked]}),
        ("git_status", path),
        ("git_commit", {**path, "message": message}),
        ("git_log", {**path, "max_count": 1}),
        ("git_checkout", {**path, "branch_name": "no-such-branch"}),
    ]


def git_server() -> Client:
    return Client(StdioTransport(command=sys.executable, args=["-m", "mcp_server_git"], keep_alive=False))


def observed(result: Any) -> Observation:
    content = [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in result.content]
    return Observation(content, Provenance.REAL, bool(result.is_error))


class AlignedFirst:
    """The sim route's simulator with aligned replay asked first; a miss fails the test."""

    def __init__(self, aligned: AlignedReplay) -> None:
        self.aligned = aligned
        self.answers: list[Any] = []

    async def simulate(self, call, session, *, deadline_s, background=False, steer=None):
        found = await self.aligned.answer(call, session)
        self.answers.append(found)
        assert found is not None, f"no aligned answer for {call.tool}"
        return found.observation


async def test_a_renamed_repository_is_served_the_warm_up_answers_with_its_own_values(tmp_path):
    a = repository(tmp_path / "first" / "alpha", "notes.txt")
    b = repository(tmp_path / "second" / "place" / "beta", "todo.txt")
    engine, store = await make_engine(tmp_path)
    async with git_server() as client:

        async def real(call: Call) -> Observation:
            return observed(await client.call_tool(call.tool, call.arguments, raise_on_error=False))

        warm = Session("warm")
        for tool, arguments in workload(a, "notes.txt", "Add notes"):
            await engine.handle(Call("mcp", "git", tool, arguments, warm.id), warm, real)

    simulator = AlignedFirst(AlignedReplay(store, engine.replay))
    engine.policies, engine.simulator = default_policies(rules=[], mode=Route.SIM), simulator
    calls = workload(b, "todo.txt", "Add the todo list")
    now = Session("now")
    served = [
        (await engine.handle(Call("mcp", "git", tool, arguments, now.id), now, real)).observation
        for tool, arguments in calls
    ]
    async with git_server() as client:  # B's real answers, after the simulated session (which never touched B)
        truth = [observed(await client.call_tool(tool, arguments, raise_on_error=False)) for tool, arguments in calls]

    assert [answer.provenance for answer in served] == [Provenance.SIM] * len(calls)
    assert [answer.position for answer in simulator.answers] == list(range(len(calls)))
    # The first status lists A's untracked file: B's had not been named yet.
    assert served[0].text == truth[0].text.replace("todo.txt", "notes.txt")
    for got, expected in zip(served[1:], truth[1:], strict=True):
        assert (_VOLATILE.sub("#", got.text), got.is_error) == (_VOLATILE.sub("#", expected.text), expected.is_error)
    assert "Add the todo list" in served[4].text and str(b) not in served[0].text  # B's message; status names no path
    assert simulator.answers[-1].renaming == {str(a): str(b), "notes.txt": "todo.txt", "Add notes": "Add the todo list"}
    assert [r["provenance"] for r in await store.recent(session="now")] == ["sim"] * len(calls)
    await store.aclose()
