"""An episode's own front door over MCP, set on the episode's session by
router/episodes: its tool calls over MCP (`/mcp/e/{id}`) are the episode's steps
(counted, capped by `max_steps`, flagged for infra errors) exactly as its REST,
OpenEnv and `simroute.Env` steps are, and the tools of its own (`http_request`) are
listed beside the MCP ones. A step taken in-process (`EPISODE_SESSION`: the episode
host's own REST step) is counted by the host already, so it passes straight through."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import mcp_types
from fastmcp.tools.base import Tool

from calls import Call, Session, SessionSlice
from router.mcp.identity import EPISODE_SESSION

Produce = Callable[[], Awaitable[mcp_types.CallToolResult]]


class EpisodeSteps(Protocol):
    """The episode host, as an episode's MCP calls reach it."""

    async def mcp_step(self, session_id: str, call: Call, produce: Produce) -> mcp_types.CallToolResult:
        """(the call, the front door's own answer to it) -> the episode step's answer."""

    def http_tools(self, session_id: str) -> Sequence[Tool]:
        """The episode's tools of its own, listed beside the MCP ones."""


@dataclass(slots=True)
class EpisodeFrontDoor(SessionSlice):
    # One reference to the host every episode shares (no closures per episode: an idle
    # episode's memory is counted, benchmarks/episode_load.py).
    host: EpisodeSteps
    session_id: str

    async def step(self, call: Call, produce: Produce) -> mcp_types.CallToolResult:
        return await self.host.mcp_step(self.session_id, call, produce)

    def tools(self) -> Sequence[Tool]:
        return self.host.http_tools(self.session_id)


def stepped_over_mcp(session: Session) -> EpisodeFrontDoor | None:
    """The episode front door of a call that arrived over MCP; None outside an episode or in-process."""
    if EPISODE_SESSION.get() is not None:
        return None
    return session.find(EpisodeFrontDoor)
