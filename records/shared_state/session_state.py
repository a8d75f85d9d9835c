"""Per-session state a call claims when it begins (its step, its occurrence of a
replay key) and the features' slices (calls.SessionSlice) shared by replicas.

One interface for every feature: no method per feature. `begin` claims the step and
occurrence and, in the same round trip, loads the slices the state was built to load
on every call (the routing marks the policies read: pins, diversions, side effects;
the facts the world model is told); `save` sends what changed in slices; `claim`
numbers a slice's counters (a perturbation rule's calls); `read` fetches one field of
a slice not loaded on every call (a page of a listing, by its cursor).

`LocalSessionState` keeps it in the process (one router): the slices are the state.
`RedisSessionState` (session_state_redis.py) shares it through Redis, so an agent
session can move between router replicas; `SharedState.session_state`
(deployment.py) chooses. The real side of stateful channels (a sandbox, a browser
context, an upstream MCP session) stays on the replica that opened it
(router/runtime/replica.py).
"""

from __future__ import annotations

from typing import Protocol

from calls import CountingSlice, Session, SessionSlice


class SessionState(Protocol):
    shared: bool

    async def begin(self, session: Session, replay_key: str) -> tuple[int, int]:
        """Claim the call's (step, occurrence of `replay_key`); the slices loaded on every
        call are merged with what other replicas saved."""

    async def save(self, session: Session, *kinds: type[SessionSlice]) -> None:
        """Share what changed in the session's `kinds` slices (none named: the slices
        loaded on every call), in one round trip."""

    async def claim(self, session: Session, kind: type[CountingSlice], counters: list[str]) -> list[int]:
        """Claim the next number of each counter of the session's `kind` slice (1-based)."""

    async def read(self, session: Session, kind: type[SessionSlice], name: str) -> str | None:
        """One field of the session's `kind` slice as shared (None: not there)."""


class LocalSessionState:
    shared = False

    async def begin(self, session: Session, replay_key: str) -> tuple[int, int]:
        return claim_locally(session, replay_key)

    async def save(self, session: Session, *kinds: type[SessionSlice]) -> None:
        return None  # the slices are the state

    async def claim(self, session: Session, kind: type[CountingSlice], counters: list[str]) -> list[int]:
        return count_locally(session.slice(kind), counters)

    async def read(self, session: Session, kind: type[SessionSlice], name: str) -> str | None:
        found = session.find(kind)
        return found.field(name) if found is not None else None


def claim_locally(session: Session, replay_key: str) -> tuple[int, int]:
    step = session.steps
    session.steps += 1
    occurrence = session.occurrences[replay_key] = session.occurrences.get(replay_key, 0) + 1
    return step, occurrence


def count_locally(counting: CountingSlice, counters: list[str]) -> list[int]:
    counts = counting.counts
    for name in counters:
        counts[name] = counts.get(name, 0) + 1
    return [counts[name] for name in counters]
