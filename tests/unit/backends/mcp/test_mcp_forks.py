"""`McpForks`' bookkeeping without starting a server: a server naming no state, a state
over `fork.max_bytes` and a token past its cap are refused with the reason, and a
refusal is kept for the (session, server); the command a fork starts binds each copy
over its original in its own mount and network namespace (run for real:
tests/integration/mcp/test_mcp_fork_git.py)."""

from __future__ import annotations

import pytest

from backends.errors import ForkUnavailable
from backends.mcp.forks import McpForks, copy_state, namespaced, state_bytes
from backends.mcp.servers import StdioServer


def test_the_state_is_measured_copied_and_bound_over_its_original(tmp_path):
    repo = tmp_path / "my repo"
    (repo / "sub").mkdir(parents=True)
    (repo / "sub" / "f").write_bytes(b"x" * 100)
    (repo / "link").symlink_to("sub/f")
    assert state_bytes([str(repo)]) == 100 + len("sub/f")  # a link counts as itself, not followed
    ((copy, original),) = copy_state([str(repo)], tmp_path / "copies")
    assert original == str(repo) and (tmp_path / "copies" / "0" / "sub" / "f").read_bytes() == b"x" * 100
    assert (tmp_path / "copies" / "0" / "link").is_symlink()
    spec = StdioServer(command="mcp-server-git", args=["--repository", str(repo)], state=[str(repo)])
    command, args = namespaced(spec, [(copy, original)])
    assert command == "unshare" and args[:6] == ["--mount", "--net", "--", "sh", "-c", args[5]]
    assert f"mount --bind {copy} '{repo}'" in args[5] and args[6:] == [
        "sh",
        "mcp-server-git",
        "--repository",
        str(repo),
    ]


async def test_refusals_say_why_and_are_kept_for_the_session_and_server(tmp_path):
    big = tmp_path / "big"
    big.mkdir()
    (big / "f").write_bytes(b"x" * 2000)
    specs = {
        "big": StdioServer(command="true", state=[str(big)]),
        "plain": StdioServer(command="true"),
    }
    forks = McpForks(specs, max_bytes=1000, max_per_group=1, copy_timeout_s=5)
    assert forks.can_fork("big") and not forks.can_fork("plain") and not forks.can_fork("other")
    with pytest.raises(ForkUnavailable, match=r"2000 bytes, over fork.max_bytes \(1000\)"):
        await forks.call("s1", "big", "t", {}, timeout_s=5)
    with pytest.raises(ForkUnavailable, match="refused at this session's first fork"):
        await forks.call("s1", "big", "t", {}, timeout_s=5)
    with pytest.raises(ForkUnavailable, match="names no local state"):
        await forks.call("s1", "plain", "t", {}, timeout_s=5)
    assert (forks.open, forks.made, forks.refusals) == (0, 0, 2)
    await forks.close_session("s1")  # its refusals go with it
    with pytest.raises(ForkUnavailable, match="over fork.max_bytes"):
        await forks.call("s1", "big", "t", {}, timeout_s=5)
    assert forks.refusals == 3 and not list(tmp_path.glob("simroute-mcp-fork-*"))
