"""Per-session routing state a call claims when it begins: its step, its
occurrence of a replay key, the session's pins, the servers a real call with
side effects has changed in the session (their recordings are stale to it: the
learned router does not replay them), the servers rehearsal diverted to sim
(their later reads must see the simulated world, on whichever replica serves them),
the call numbers of perturbation rules (a seeded plan gives the same
perturbations whichever replica serves a call), the facts the session's answers
stated (the world model is told them on whichever replica simulates), and the pages
of paginated listings still to be served, by cursor (a follow-up call gets the next
page whichever replica serves it).

`LocalSessionState` keeps it in the process (one router). `RedisSessionState`
shares it through Redis, so an agent session can move between router replicas:
step and occurrence counters are atomic increments, pins are a hash, the
side-effect and diversion marks sets, all read in one round trip per call (a mark one replica
adds is seen by the next call on any replica). The real side of stateful channels (a sandbox, a browser
context, an upstream MCP session) stays on the replica that opened it (a sandbox is
claimed per replica: router/runtime/replica.py).
"""

from __future__ import annotations

from typing import Any, Protocol

from router.types import Session


class SessionState(Protocol):
    shared: bool

    async def begin(self, session: Session, replay_key: str) -> tuple[int, int]:
        """Claim the call's (step, occurrence of `replay_key`); refreshes `session.pinned`,
        `session.side_effects`, `session.diverted` and `session.facts`."""

    async def save_pins(self, session: Session) -> None: ...

    async def count(self, session: Session, counters: list[str]) -> list[int]:
        """Claim the next number of each counter (a perturbation rule's calls, 1-based)."""

    async def save_pages(self, session: Session, pages: dict[str, dict[str, Any]]) -> None:
        """Keep the pages of a paginated listing, by the cursor that asks for each."""

    async def page(self, session: Session, cursor: str) -> dict[str, Any] | None:
        """The page a cursor asks for (None: a cursor the session was not given)."""

    async def save_side_effects(self, session: Session, marks: set[tuple[str, str, str]]) -> None:
        """Share new side-effect marks ((channel, server, tool)) of the session."""

    async def save_diverted(self, session: Session, marks: set[tuple[str, str]]) -> None:
        """Share new diversion marks ((channel, server)) of the session."""

    async def save_facts(self, session: Session, facts: dict[str, tuple[int, str]], *, limit: int) -> None:
        """Share stated facts (name -> (step, value)) of the session, at most `limit` kept."""


class LocalSessionState:
    shared = False

    async def begin(self, session: Session, replay_key: str) -> tuple[int, int]:
        return claim_locally(session, replay_key)

    async def save_pins(self, session: Session) -> None:
        return None

    async def count(self, session: Session, counters: list[str]) -> list[int]:
        return count_locally(session, counters)

    async def save_pages(self, session: Session, pages: dict[str, dict[str, Any]]) -> None:
        session.pages.update(pages)

    async def page(self, session: Session, cursor: str) -> dict[str, Any] | None:
        return session.pages.get(cursor)

    async def save_side_effects(self, session: Session, marks: set[tuple[str, str, str]]) -> None:
        return None

    async def save_diverted(self, session: Session, marks: set[tuple[str, str]]) -> None:
        return None

    async def save_facts(self, session: Session, facts: dict[str, tuple[int, str]], *, limit: int) -> None:
        return None  # kept in `session.facts` already


def claim_locally(session: Session, replay_key: str) -> tuple[int, int]:
    step = session.steps
    session.steps += 1
    occurrence = session.occurrences[replay_key] = session.occurrences.get(replay_key, 0) + 1
    return step, occurrence


def count_locally(session: Session, counters: list[str]) -> list[int]:
    counts = session.perturbation_counts
    for name in counters:
        counts[name] = counts.get(name, 0) + 1
    return [counts[name] for name in counters]
