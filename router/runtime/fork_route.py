"""The fork route's backend (`calls.Forks`): a call routed `fork` runs on its
session's fork of the channel, and its answer is the real program's, provenance
`fork`, its source naming the fork and what was copied into it. The shell forks, and
so do stdio MCP servers whose state is local (`mcpServers.<name>.state`); other
channels and servers are refused (the engine simulates them and records why)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from fastmcp.exceptions import MCPError

from backends.errors import ForkUnavailable
from backends.mcp.forks import McpForks
from backends.mcp.servers import StdioServer
from backends.shell.forks import ShellForks
from calls import Call, ForkRefused, Observation, Provenance, Session, Source
from router.config import Config


class _McpFailed(Exception):
    """A fork's MCP server failed (fastmcp's MCPError, a closed connection): its cause chained."""


class ChannelForks:
    def __init__(self, config: Config, shell: ShellForks | None, mcp: McpForks | None = None) -> None:
        self.config = config
        self.shell = shell
        self.mcp = mcp

    def can_fork(self, channel: str) -> bool:
        # An MCP call of a server without local state is refused in run() (simulated, the reason noted).
        return (channel == "shell" and self.shell is not None) or (channel == "mcp" and self.mcp is not None)

    async def run(self, call: Call, session: Session, *, deadline_s: float) -> Observation:
        started = time.monotonic()
        try:
            async with asyncio.timeout(deadline_s):  # forking and the call each have their own, shorter
                if call.channel == "mcp" and self.mcp is not None:
                    content, structured, is_error, described = await self._mcp(call, deadline_s)
                else:
                    content, structured, is_error, described = await self._shell(call)
        except ForkUnavailable as exc:
            raise ForkRefused(str(exc)) from exc
        except TimeoutError:
            return Observation.error(
                f"simroute: the fork did not answer within {deadline_s:g}s", latency_s=time.monotonic() - started
            )
        except _McpFailed as exc:  # a fork's MCP server failed or hung up: said, not raised
            failed = f"simroute: the fork of {call.server!r} failed: {exc}"
            return Observation.error(failed, latency_s=time.monotonic() - started)
        return Observation(
            content=content,
            provenance=Provenance.FORK,
            is_error=is_error,
            structured=structured,
            latency_s=time.monotonic() - started,
            source=Source(extra={"fork": described}),
        )

    async def _shell(self, call: Call) -> tuple[list[dict[str, Any]], Any, bool, dict[str, Any]]:
        if self.shell is None or call.channel != "shell":
            raise ForkRefused(f"the {call.channel} channel cannot fork here")
        command = call.arguments.get("command")
        if not isinstance(command, str) or not command:
            raise ForkRefused("a shell call without a command cannot fork")
        timeout_s = self.config.shell.command_timeout(call.arguments.get("timeout_s"))
        result, _, described = await self.shell.run(call.session_id, command, timeout_s=timeout_s)
        return [{"type": "text", "text": result.text()}], result.structured(), result.is_error, described

    async def _mcp(self, call: Call, deadline_s: float) -> tuple[list[dict[str, Any]], Any, bool, dict[str, Any]]:
        assert self.mcp is not None
        if not self.mcp.can_fork(call.server):
            raise ForkRefused(
                f"the MCP server {call.server!r} names no local state to fork (mcpServers.{call.server}.state)"
            )
        try:
            result, described = await self.mcp.call(
                call.session_id, call.server, call.tool, dict(call.arguments), timeout_s=deadline_s
            )
        except (MCPError, RuntimeError, OSError) as exc:
            raise _McpFailed(str(exc) or type(exc).__name__) from exc
        content = [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in result.content]
        return content, result.structured_content, bool(result.is_error), described

    async def close_session(self, session_id: str) -> None:
        """The session's forks removed: its shell's and its MCP servers'."""
        if self.mcp is not None:
            await self.mcp.close_session(session_id)
        if self.shell is not None:
            await self.shell.close_session(session_id)

    async def aclose(self) -> None:
        """The MCP servers' forks removed (the shell's go with the sandboxes: Runtime._close_shell)."""
        if self.mcp is not None:
            await self.mcp.aclose()


def shell_forks(config: Config, sandboxes, group_of) -> ShellForks | None:
    """The shell's forks, when the config can route a call to `fork` and the shell is served."""
    if sandboxes is None or not config.may_fork():
        return None
    section = config.fork
    return ShellForks(
        sandboxes,
        max_bytes=section.max_bytes,
        max_per_group=section.max_per_token,
        copy_timeout_s=section.copy_timeout_s,
        group_of=group_of,
    )


def forkable_servers(config: Config) -> dict[str, StdioServer]:
    """The stdio MCP servers that name their local state: the ones a session can fork."""
    return {name: spec for name, spec in config.real_upstreams.items() if isinstance(spec, StdioServer) and spec.state}


def mcp_forks(config: Config, group_of) -> McpForks | None:
    """The MCP servers' forks, when the config can route a call to `fork` and a server names its state."""
    servers = forkable_servers(config)
    if not servers or not config.may_fork():
        return None
    section = config.fork
    return McpForks(
        servers,
        max_bytes=section.max_bytes,
        max_per_group=section.max_per_token,
        copy_timeout_s=section.copy_timeout_s,
        connect_timeout_s=config.startup_timeout_s,
        group_of=group_of,
    )
