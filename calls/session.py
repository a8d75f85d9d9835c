"""An agent session: its history of turns, its counters, and its features' slices."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from calls.call import Call, Decision, Observation
from calls.slices import SessionSlice


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
    (None: every one), what a replay miss does (`error`, `real`, `sim`: before the
    config's `replay` section), the named recording its records are tagged with. A
    session with one is an episode."""

    policies: Sequence[RoutingPolicy] | None = None
    replay_from: str | None = None
    scope: frozenset[tuple[str, str]] | None = None
    on_miss: str | None = None
    record_as: str | None = None


@dataclass(slots=True)
class WorldDocuments(SessionSlice):
    """The initial state the world model is told, by channel ("*": every channel): an
    episode's world document, its files for a simulated shell; kept in the process."""

    by_channel: dict[str, str] = field(default_factory=dict)


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

    def world_document_for(self, channel: str) -> str | None:
        """The initial state the world model is told for `channel`, or None."""
        found = self.find(WorldDocuments)
        if found is None:
            return None
        parts = [text for text in (found.by_channel.get("*"), found.by_channel.get(channel)) if text]
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
