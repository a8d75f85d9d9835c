"""`McpForks`: each session's fork of a stdio MCP server whose state is local.

A server entry names its state (`state: [paths]`). At a session's first forked call
of that server, the paths are copied (bounded by `max_bytes`) and a second instance
of the server starts in a mount and network namespace (`unshare --mount --net`,
util-linux, as root) with each copy bound over its original: the server sees the
same paths, so the agent's arguments and its answers need no rewriting, and it has
no network at all. Every later forked call of the session goes to that instance.

A fork is removed with its session (close, idle TTL) and when the router stops: its
process is closed, its namespace goes with it, and the copies are deleted. A state
over `max_bytes`, a token past its cap, or a copy or start that fails refuses the
fork (ForkUnavailable, shared with the shell's forks), and the refusal is kept for
the (session, server).
"""

from __future__ import annotations

import asyncio
import logging
import os
import shlex
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from mcp_types import CallToolResult

from backends.errors import ForkUnavailable
from backends.mcp.servers import StdioServer
from backends.mcp.upstream import stdio_env

log = logging.getLogger("simroute.upstream")

UNSHARE = "unshare"


def state_bytes(paths: list[str]) -> int:
    """Bytes under `paths` (files' own sizes, symbolic links not followed; blocking)."""
    total = 0
    for path in map(Path, paths):
        if path.is_symlink() or path.is_file():
            total += path.lstat().st_size
            continue
        for root, _, files in os.walk(path):
            total += sum(os.lstat(os.path.join(root, name)).st_size for name in files)
    return total


def copy_state(paths: list[str], into: Path) -> list[tuple[str, str]]:
    """Each of `paths` copied under `into` (metadata and links kept): (copy, original) pairs."""
    pairs = []
    for n, original in enumerate(paths):
        target = into / str(n)
        if Path(original).is_dir():
            shutil.copytree(original, target, symlinks=True)
        else:
            shutil.copy2(original, target)
        pairs.append((str(target), original))
    return pairs


def namespaced(spec: StdioServer, binds: list[tuple[str, str]]) -> tuple[str, list[str]]:
    """The command and arguments that start `spec` in its own mount and network
    namespace with each copy bound over its original (a private mount propagation,
    unshare's default: nothing leaks to the host's mounts). The working directory is
    entered again once bound, so a server started inside its state sees the copy."""
    mounts = " && ".join(f"mount --bind {shlex.quote(copy)} {shlex.quote(original)}" for copy, original in binds)
    script = f'{mounts} && {{ cd "$PWD" 2>/dev/null || true; }} && exec "$@"'
    return UNSHARE, ["--mount", "--net", "--", "sh", "-c", script, "sh", spec.command, *spec.args]


@dataclass(slots=True)
class McpFork:
    id: str
    server: str
    client: Client
    folder: Path
    copied: dict[str, int]  # bytes per original path
    started_s: float = 0.0
    calls: int = 0
    created: float = field(default_factory=time.time)

    def describe(self) -> dict[str, Any]:
        """What an answer from this fork carries under its source's `fork` key."""
        return {
            "id": self.id,
            "call": self.calls,
            "server": self.server,
            "from": "server state",
            "copied": {"paths": dict(self.copied), "bytes": sum(self.copied.values())},
            "fork_s": round(self.started_s, 3),
        }


class McpForks:
    def __init__(
        self,
        specs: Mapping[str, StdioServer],
        *,
        max_bytes: int,
        max_per_group: int,
        copy_timeout_s: float,
        connect_timeout_s: float = 30.0,
        group_of: Callable[[str], str] = lambda session_id: "",
    ) -> None:
        self.specs = {name: spec for name, spec in specs.items() if spec.state}
        self.max_bytes, self.max_per_group, self.copy_timeout_s = max_bytes, max_per_group, copy_timeout_s
        self.connect_timeout_s = connect_timeout_s
        self.group_of = group_of
        self._forks: dict[tuple[str, str], McpFork] = {}
        self._refused: dict[tuple[str, str], str] = {}
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}
        self.made = 0
        self.refusals = 0

    @property
    def open(self) -> int:
        return len(self._forks)

    def can_fork(self, server: str) -> bool:
        return server in self.specs

    def fork_of(self, session_id: str, server: str) -> McpFork | None:
        return self._forks.get((session_id, server))

    async def call(
        self, session_id: str, server: str, tool: str, arguments: dict[str, Any], *, timeout_s: float
    ) -> tuple[CallToolResult, dict[str, Any]]:
        """`tool` called on the session's fork of `server` (made now if it has none), and
        the fork described as of this call. Raises ForkUnavailable."""
        fork = await self._fork_for(session_id, server)
        fork.calls += 1
        described = fork.describe()
        return await fork.client.call_tool_mcp(tool, arguments, timeout=timeout_s), described

    async def _fork_for(self, session_id: str, server: str) -> McpFork:
        key = (session_id, server)
        async with self._locks.setdefault(key, asyncio.Lock()):
            if (fork := self._forks.get(key)) is not None:
                return fork
            if (why := self._refused.get(key)) is not None:
                raise ForkUnavailable(f"{why} (refused at this session's first fork)")
            try:
                fork = await self._make(session_id, server)
            except ForkUnavailable as exc:
                self._refused[key], self.refusals = str(exc), self.refusals + 1
                raise
            self._forks[key], self.made = fork, self.made + 1
            return fork

    async def _make(self, session_id: str, server: str) -> McpFork:
        spec = self.specs.get(server)
        if spec is None:
            raise ForkUnavailable(f"the MCP server {server!r} names no local state (mcpServers.{server}.state)")
        if shutil.which(UNSHARE) is None:
            raise ForkUnavailable("unshare (util-linux) is not installed")
        group = self.group_of(session_id)
        if sum(1 for s, _ in self._forks if self.group_of(s) == group) >= self.max_per_group:
            raise ForkUnavailable(f"this token already has {self.max_per_group} forks open (fork.max_per_token)")
        started = time.monotonic()
        # Relative paths are the server's (its `cwd`); the mount targets are absolute.
        paths = [os.path.abspath(os.path.join(spec.cwd or os.getcwd(), path)) for path in spec.state]
        sizes = {path: await asyncio.to_thread(state_bytes, [path]) for path in paths}
        if sum(sizes.values()) > self.max_bytes:
            raise ForkUnavailable(
                f"the server's state is {sum(sizes.values())} bytes, over fork.max_bytes ({self.max_bytes})"
            )
        folder = Path(tempfile.mkdtemp(prefix="simroute-mcp-fork-"))
        try:
            binds = await asyncio.wait_for(asyncio.to_thread(copy_state, paths, folder), self.copy_timeout_s)
            command, args = namespaced(spec, binds)
            client: Client = Client(
                StdioTransport(command=command, args=args, env=stdio_env(spec), cwd=spec.cwd, keep_alive=False)
            )
            async with asyncio.timeout(self.connect_timeout_s):
                await client.__aenter__()
        except (OSError, RuntimeError, TimeoutError, shutil.Error) as exc:
            await asyncio.to_thread(shutil.rmtree, folder, True)
            raise ForkUnavailable(f"the server's fork failed to start: {type(exc).__name__}: {exc}") from exc
        fork = McpFork(uuid.uuid4().hex[:12], server, client, folder, sizes, started_s=time.monotonic() - started)
        log.info(
            "forked MCP server %r for a session in %.0f ms (%d bytes)",
            server,
            fork.started_s * 1000,
            sum(sizes.values()),
        )
        return fork

    async def close_session(self, session_id: str) -> None:
        for key in [k for k in self._forks if k[0] == session_id]:
            await self._remove(self._forks.pop(key))
        for key in [k for k in self._refused if k[0] == session_id]:
            del self._refused[key]
        for key in [k for k in self._locks if k[0] == session_id]:
            del self._locks[key]

    async def aclose(self) -> None:
        for session_id in {k[0] for k in self._forks}:
            await self.close_session(session_id)

    @staticmethod
    async def _remove(fork: McpFork) -> None:
        try:
            async with asyncio.timeout(5):
                await fork.client.close()
        # Boundary: a cleanup path; the copies are deleted whatever closing raised.
        except Exception as exc:  # noqa: BLE001 - logged
            log.debug("closing an MCP fork failed: %s", exc)
        await asyncio.to_thread(shutil.rmtree, fork.folder, True)
