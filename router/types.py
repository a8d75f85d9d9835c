"""The pipeline's types: every channel speaks `Call` in and `Observation` out.

A leaf module: it imports nothing from the rest of simroute, and every other
room imports it.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol


class Route(StrEnum):
    REAL = "real"
    SIM = "sim"
    REPLAY = "replay"
    SHADOW = "shadow"  # serve the real side, run the simulated side off the agent's path
    DENY = "deny"


class Provenance(StrEnum):
    """Where an observation came from. Travels with the observation so that a
    simulator error never looks like an agent error."""

    REAL = "real"
    SIM = "sim"
    REPLAY = "replay"
    NONE = "none"  # produced by simroute itself: a denial, a validation error


@dataclass(frozen=True, slots=True)
class Call:
    """One intercepted action of an agent."""

    channel: str  # "mcp", "http", "shell", "browser"
    server: str  # the upstream the call is addressed to
    tool: str  # the upstream's own name for the action
    arguments: dict[str, Any]
    session_id: str


@dataclass(slots=True)
class Observation:
    """What the environment (real, simulated or replayed) answered.

    `content` holds MCP content blocks as plain JSON objects, so an observation
    is storable and replayable without the MCP types.
    """

    content: list[dict[str, Any]]
    provenance: Provenance
    is_error: bool = False
    structured: dict[str, Any] | None = None
    latency_s: float = 0.0

    @classmethod
    def error(cls, message: str, provenance: Provenance = Provenance.NONE, latency_s: float = 0.0) -> Observation:
        return cls(
            content=[{"type": "text", "text": message}],
            provenance=provenance,
            is_error=True,
            latency_s=latency_s,
        )

    @property
    def text(self) -> str:
        return "\n".join(block.get("text", "") for block in self.content if block.get("type") == "text")

    def to_json(self) -> dict[str, Any]:
        return {
            "content": self.content,
            "structured": self.structured,
            "is_error": self.is_error,
            "provenance": str(self.provenance),
            "latency_s": self.latency_s,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Observation:
        return cls(
            content=list(data.get("content") or []),
            structured=data.get("structured"),
            is_error=bool(data.get("is_error")),
            provenance=Provenance(data.get("provenance", "none")),
            latency_s=float(data.get("latency_s") or 0.0),
        )


@dataclass(frozen=True, slots=True)
class Decision:
    route: Route
    policy: str  # the name of the deciding policy
    reason: str


@dataclass(slots=True)
class Turn:
    """One step of a session as the agent saw it."""

    call: Call
    observation: Observation


@dataclass(slots=True)
class Session:
    """An agent session: its history and per-session routing state."""

    id: str
    created_at: float = field(default_factory=time.time)
    last_seen: float = field(default_factory=time.monotonic)
    history: list[Turn] = field(default_factory=list)
    # How often each replay key has been called in this session: the n-th call
    # of a key replays the n-th recorded occurrence.
    occurrences: dict[str, int] = field(default_factory=dict)
    # The route a stateful environment (channel, server) of this session is pinned to.
    pinned: dict[tuple[str, str], Route] = field(default_factory=dict)

    @property
    def step(self) -> int:
        return len(self.history)

    def touch(self) -> None:
        self.last_seen = time.monotonic()


# The real side of a call, handed to the engine by the front door that owns it.
CallNext = Callable[[Call], Awaitable[Observation]]


class Simulator(Protocol):
    """The simulated side: predicts the observation of a call in its session.
    Never raises for a model failure: it answers with an error observation.
    `background` work (shadowing) yields to the agent's own simulated calls."""

    async def simulate(self, call: Call, session: Session, *, deadline_s: float, background: bool = False) -> Observation: ...
