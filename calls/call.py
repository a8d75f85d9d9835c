"""One call of an agent, what answered it, and the decision that routed it: every
channel speaks `Call` in and `Observation` out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from calls.routes import Provenance, Route
from calls.source import Source


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
    # Where within its provenance it came from (None: nothing more to say, as in every
    # record written before sources existed).
    source: Source | None = None

    @property
    def truncated(self) -> bool:
        """A body cut at the record limit (HTTP): not the answer the agent would get."""
        return isinstance(self.structured, dict) and self.structured.get("truncated") is True

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
        out: dict[str, Any] = {
            "content": self.content,
            "structured": self.structured,
            "is_error": self.is_error,
            "provenance": str(self.provenance),
            "latency_s": self.latency_s,
        }
        # Only when it says something: an observation without one is written as before.
        if (source := self.source_json()) is not None:
            out["source"] = source
        return out

    def source_json(self) -> dict[str, Any] | None:
        """The source as every carrier writes it; None when there is none to tell."""
        return (self.source.to_json() or None) if self.source is not None else None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Observation:
        source = data.get("source")
        return cls(
            content=list(data.get("content") or []),
            structured=data.get("structured"),
            is_error=bool(data.get("is_error")),
            provenance=Provenance(data.get("provenance", "none")),
            latency_s=float(data.get("latency_s") or 0.0),
            source=Source.from_json(source) if isinstance(source, dict) and source else None,
        )


@dataclass(frozen=True, slots=True)
class Decision:
    route: Route
    policy: str  # the name of the deciding policy
    reason: str
    # The safety gate's verdict on the call (safe, side_effect, destructive, unknown),
    # attached whatever policy decided; None when no gate ran.
    safety: str | None = None
    safety_reason: str = ""
    # A deciding rule's actions beyond the route: the shadow sampling rate of its real
    # calls and the real call's deadline, overriding the configured ones when set.
    shadow_rate: float | None = None
    deadline_s: float | None = None
    # Replay a recording made for another value of an argument the tool only echoes,
    # with this call's value substituted (the learned router decides it from evidence).
    replay_as: ReplayAlias | None = None
    # The perturbation plan a deciding rule names (policies/perturbation); None: the
    # session's or the configured one.
    perturbation: str | None = None


@dataclass(frozen=True, slots=True)
class ReplayAlias:
    key: str  # the replay key of the recording to serve
    argument: str
    recorded: str  # the argument's value in that recording
    value: str  # this call's value, substituted for it
