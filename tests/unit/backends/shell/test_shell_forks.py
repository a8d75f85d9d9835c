"""`ShellForks`' bookkeeping, with a stand-in for the sandboxes (the copy itself is
tested on the Docker engine: tests/integration/shell/test_shell_fork.py): one fork per
session, made once; a cap per token; a refusal kept for the session; a fork removed
with its session."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from backends.shell.forks import ForkUnavailable, ShellForks
from backends.shell.screen import ShellResult


@dataclass
class StandInShell:
    container: object = None
    closed: bool = False
    commands: list[str] = field(default_factory=list)

    async def exec(self, command: str, *, timeout_s: float) -> ShellResult:
        self.commands.append(command)
        return ShellResult("ok", 0, "/workspace")

    async def aclose(self) -> None:
        self.closed = True


@dataclass
class StandInSandboxes:
    made: list[StandInShell] = field(default_factory=list)

    def real_shell(self, session_id: str) -> None:
        return None  # no real sandbox yet: the fork starts from the initial workspace

    async def spare(self, *, prepared: bool, network: bool | None = None) -> StandInShell:
        assert prepared and network is False
        self.made.append(StandInShell())
        return self.made[-1]


def forks(**options) -> tuple[ShellForks, StandInSandboxes]:
    sandboxes = StandInSandboxes()
    settings = {"max_bytes": 1000, "max_per_group": 1, "copy_timeout_s": 5, "group_of": lambda s: s.partition("/")[0]}
    return ShellForks(sandboxes, **{**settings, **options}), sandboxes  # type: ignore[arg-type]


async def test_a_session_forks_once_and_is_capped_per_token_until_its_fork_closes():
    shell_forks, sandboxes = forks()
    _, first = await shell_forks.exec("alice/s1", "rm -rf x", timeout_s=5)
    _, again = await shell_forks.exec("alice/s1", "ls", timeout_s=5)
    assert first is again and first.source == "initial workspace" and sandboxes.made[0].commands == ["rm -rf x", "ls"]
    await shell_forks.exec("bob/s1", "ls", timeout_s=5)  # another token: its own cap
    with pytest.raises(ForkUnavailable, match="already has 1 forks open"):
        await shell_forks.exec("alice/s2", "ls", timeout_s=5)
    with pytest.raises(ForkUnavailable, match="refused at this session's first fork"):
        await shell_forks.exec(
            "alice/s2", "ls", timeout_s=5
        )  # kept: the session is not forked later from another state
    assert (shell_forks.open, shell_forks.made, shell_forks.refusals) == (2, 2, 1)
    await shell_forks.close_session("alice/s1")
    assert sandboxes.made[0].closed and shell_forks.fork_of("alice/s1") is None and shell_forks.open == 1
    await shell_forks.close_session("alice/s2")  # its refusal goes with it
    await shell_forks.exec("alice/s2", "ls", timeout_s=5)
    await shell_forks.aclose()
    assert all(shell.closed for shell in sandboxes.made)
