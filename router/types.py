"""The pipeline's types: every channel speaks `Call` in and `Observation` out.

A leaf module: it imports nothing from the rest of simroute but `router.source`
(an observation's `Source`) and `router.slices` (a session's feature state), leaves
too, re-exported here; every other room imports it.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from router.slices import CountingSlice as CountingSlice
from router.slices import SessionSlice as SessionSlice
from router.source import Source as Source


class Route(StrEnum):
    REAL = "real"
    SIM = "sim"
    REPLAY = "replay"
    SHADOW = "shadow"  # serve the real side, run the simulated side off the agent's path
    DENY = "deny"


class Mode(StrEnum):
    """What a config's `mode` or a rule's `route` names: a route, or `learned`, which
    resolves each call to real, sim or replay (policies/learned)."""

    REAL = "real"
    SIM = "sim"
    REPLAY = "replay"
    SHADOW = "shadow"
    DENY = "deny"
    LEARNED = "learned"

    @property
    def route(self) -> Route | None:
        """The route this mode always takes; None for `learned` (decided per call)."""
        return None if self is Mode.LEARNED else Route(self.value)


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


# Perturbations that answer instead of the call (the call goes to no side).
FAULT_KINDS = frozenset({"error", "timeout", "rate_limit"})
# Perturbations that change the route's answer after it ran (the record keeps the route's own).
ANSWER_KINDS = frozenset({"empty", "truncate", "paginate", "mislead"})


@dataclass(frozen=True, slots=True)
class Perturbation:
    """What a perturbation plan decided for one call (policies/perturbation): a fault
    answered instead of the call (`error`, `timeout`, `rate_limit`), a delay
    (`latency`), or a change of the answer (`empty`, `truncate`). A pure function of
    (seed, session key, rule, n): the same seed gives the same perturbations anywhere."""

    kind: str
    rule: str  # "<plan>:<rule>"
    seed: int
    n: int  # the call's number among the calls the rule matched in its scope (1-based)
    delay_s: float = 0.0  # latency: the delay; timeout: how long the call hangs before it fails
    status: int | None = None  # error: the HTTP status
    exit_code: int = 1  # error: a shell command's exit code
    message: str = ""  # error: the text the agent sees ("" : the channel's usual one)
    retry_after_s: float | None = None  # error (429, 503), rate_limit: the Retry-After the agent is told
    keep: float = 1.0  # truncate: the share of a list or text kept
    limit: int | None = None  # rate_limit: the calls a bucket allows
    page_size: int = 0  # paginate: the items of a page
    cursor_argument: str = "cursor"  # paginate: the argument a follow-up call passes the cursor in
    page: int = 0  # paginate: the page the agent got (1: the first)

    @property
    def is_fault(self) -> bool:
        """A fault answers instead of the call: the call is not sent to any side."""
        return self.kind in FAULT_KINDS

    def meta(self) -> dict[str, Any]:
        """What the observation's `_meta.simroute.perturbation` and the record carry."""
        out: dict[str, Any] = {"kind": self.kind, "rule": self.rule, "seed": self.seed, "n": self.n}
        if self.kind in ("latency", "timeout"):
            out["delay_s"] = round(self.delay_s, 6)
        if self.kind == "paginate" and self.page:
            out["page"] = self.page
        return out


@dataclass(frozen=True, slots=True)
class Steer:
    """A meaning-level perturbation's hold on one simulated answer: an instruction
    added to the world model's prompt for this call only, and a check of the answer
    against the perturbation's kind (None: it holds; else why not)."""

    kind: str
    instruction: str
    check: Callable[[Observation], str | None] = field(default=lambda observation: None)


@dataclass(frozen=True, slots=True)
class ReplayAlias:
    key: str  # the replay key of the recording to serve
    argument: str
    recorded: str  # the argument's value in that recording
    value: str  # this call's value, substituted for it


@dataclass(slots=True)
class Turn:
    """One step of a session as the agent saw it."""

    call: Call
    observation: Observation
    # A perturbed answer (policies/perturbation): part of the history the agent saw,
    # never a world model's example of how the tool answers.
    perturbed: bool = False
    # A fault perturbation answered instead of the call: no side ran it, so the world
    # the world model simulates never saw it (shown, the model imitates the fault).
    not_run: bool = False

    def of_environment(self, channel: str, server: str) -> bool:
        """A turn the environment (channel, server) saw: what its world model is told."""
        return self.call.channel == channel and self.call.server == server and not self.not_run


# Turns of a session kept in memory; older ones are read back from the record store
# when a prompt has room for them (world models fit a context far smaller than this).
HISTORY_IN_MEMORY = 256


class RoutingPolicy(Protocol):
    """A routing policy (policies/base.py): pure `decide(call, session) -> Decision | None`."""

    name: str

    def decide(self, call: Call, session: Session) -> Decision | None: ...


@dataclass(slots=True)
class EpisodeSetup(SessionSlice):
    """An episode's own setup (router/episodes), kept in the process (the episode's
    row, shared by replicas, rebuilds it): its policy chain (None: the runtime's), the
    named recording its replays come from, the (channel, server) environments in play
    (None: every one). A session with one is an episode."""

    policies: Sequence[RoutingPolicy] | None = None
    replay_from: str | None = None
    scope: frozenset[tuple[str, str]] | None = None


@dataclass(slots=True)
class SessionWorld(SessionSlice):
    """The initial state the world model is told, by channel ("*": every channel): an
    episode's world document, its files for a simulated shell; kept in the process."""

    world: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class Session:
    """An agent session: its history, its counters, and its features' slices."""

    id: str
    created_at: float = field(default_factory=time.time)
    last_seen: float = field(default_factory=time.monotonic)
    # The most recent turns as the agent saw them, oldest first (at most HISTORY_IN_MEMORY).
    history: list[Turn] = field(default_factory=list)
    # Steps claimed by the session's calls (a call takes its step when it begins).
    steps: int = 0
    # Turns dropped from `history` to bound memory (the store still has them).
    forgotten: int = 0
    # How often each replay key has been called in this session: the n-th call
    # of a key replays the n-th occurrence of the replay source.
    occurrences: dict[str, int] = field(default_factory=dict)
    # Calls begun and not yet complete: a session busy with a long call is not idle.
    in_flight: int = 0
    # Set when the session closed (the agent's close, idle reaping, a stop): its backends
    # are being torn down, so a real call failing now tells nothing of the upstream.
    closed: bool = False
    # An episode's seed (fixes the world model's sampling and every seeded decision) and
    # its own idle TTL (None: the registry's).
    seed: int | None = None
    idle_ttl_s: float | None = None
    # Each feature's own state, by its slice type (see `SessionSlice`).
    slices: dict[type[SessionSlice], SessionSlice] = field(default_factory=dict)

    def slice[S: SessionSlice](self, kind: type[S]) -> S:
        """The session's `kind` slice, made empty on first use."""
        found = self.slices.get(kind)
        if found is None:
            found = self.slices[kind] = kind()
        return found  # type: ignore[return-value]

    def find[S: SessionSlice](self, kind: type[S]) -> S | None:
        return self.slices.get(kind)  # type: ignore[return-value]

    @property
    def is_episode(self) -> bool:
        return EpisodeSetup in self.slices

    @property
    def episode(self) -> EpisodeSetup | None:
        return self.find(EpisodeSetup)

    def world_for(self, channel: str) -> str | None:
        """The initial state the world model is told for `channel`, or None."""
        found = self.find(SessionWorld)
        if found is None:
            return None
        parts = [text for text in (found.world.get("*"), found.world.get(channel)) if text]
        return "\n\n".join(parts) or None

    @property
    def step(self) -> int:
        return self.steps

    def add_turn(self, turn: Turn) -> None:
        self.history.append(turn)
        if len(self.history) > HISTORY_IN_MEMORY:
            # Drop a batch at once: a list shifts once per batch, not once per call.
            dropped = len(self.history) - HISTORY_IN_MEMORY // 2
            del self.history[:dropped]
            self.forgotten += dropped

    def touch(self) -> None:
        self.last_seen = time.monotonic()

    def seeded(self, salt: int) -> int | None:
        """A seed for the session's call at step `salt`, derived from the episode's seed
        (None when the session has none): the same episode seed gives the same seeds."""
        if self.seed is None:
            return None
        return (self.seed * 1_000_003 + salt * 7_919) % 2**31


# The real side of a call, handed to the engine by the front door that owns it.
CallNext = Callable[[Call], Awaitable[Observation]]


class SimulatorUnavailable(Exception):
    """The simulated side is down (no model file, no model server): raised to
    background work only (see `Simulator`), which waits for it and tries again."""


class Simulator(Protocol):
    """The simulated side: predicts the observation of a call in its session.
    Never raises for a model failure (it answers with an error observation), except
    that `background` work (shadowing), which yields to the agent's own simulated
    calls, gets `SimulatorUnavailable` when the model is down: the work waits for the
    model instead of recording its absence as the model's answer. `steer`
    (a meaning-level perturbation) shapes one answer and is checked against it."""

    async def simulate(
        self, call: Call, session: Session, *, deadline_s: float, background: bool = False, steer: Steer | None = None
    ) -> Observation: ...
