"""The fork route's MCP side without a server: a server naming no state is refused (the
engine simulates it, the reason noted); a fork's answer carries provenance `fork` and
its description; a fork whose server failed answers with simroute's own error
(provenance `none`), not an exception."""

from __future__ import annotations

import pytest
from fastmcp.exceptions import MCPError
from mcp_types import CallToolResult, TextContent

from calls import Call, ForkRefused, Provenance, Session
from router.config import Config
from router.runtime.fork_route import ChannelForks


class StandInForks:
    def __init__(self, answer: CallToolResult | Exception) -> None:
        self.answer = answer

    def can_fork(self, server: str) -> bool:
        return server == "git"

    async def call(self, session_id, server, tool, arguments, *, timeout_s):
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer, {"id": "f1", "call": 1, "server": server}


def git_call(server: str = "git") -> Call:
    return Call("mcp", server, "git_reset", {"repo_path": "/srv/repo"}, "s")


async def test_an_mcp_fork_answers_with_provenance_fork_and_its_description():
    answer = CallToolResult(content=[TextContent(type="text", text="All staged changes reset")])
    forks = ChannelForks(Config(), None, StandInForks(answer))  # type: ignore[arg-type]
    assert forks.can_fork("mcp") and not forks.can_fork("shell")
    observation = await forks.run(git_call(), Session("s"), deadline_s=5)
    assert observation.provenance is Provenance.FORK and observation.text == "All staged changes reset"
    assert observation.source is not None and observation.source.extra["fork"] == {
        "id": "f1",
        "call": 1,
        "server": "git",
    }
    with pytest.raises(ForkRefused, match="names no local state"):
        await forks.run(git_call("files"), Session("s"), deadline_s=5)


async def test_a_failed_fork_is_simroutes_own_error_not_an_exception():
    forks = ChannelForks(Config(), None, StandInForks(MCPError(-32000, "Connection closed")))  # type: ignore[arg-type]
    observation = await forks.run(git_call(), Session("s"), deadline_s=5)
    assert observation.is_error and observation.provenance is Provenance.NONE
    assert observation.text == "simroute: the fork of 'git' failed: Connection closed"
