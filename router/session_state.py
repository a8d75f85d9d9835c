"""Per-session routing state a call claims when it begins: its step, its
occurrence of a replay key, the session's pins, and the servers a real call with
side effects has changed in the session (their recordings are stale to it: the
learned router does not replay them).

`LocalSessionState` keeps it in the process (one router). `RedisSessionState`
shares it through Redis, so an agent session can move between router replicas:
step and occurrence counters are atomic increments, pins are a hash, the
side-effect marks a set, all read in one round trip per call (a mark one replica
adds is seen by the next call on any replica). The real side of stateful channels (a sandbox, a browser
context, an upstream MCP session) stays on the replica that opened it.
"""

from __future__ import annotations

from typing import Protocol

from router.types import Route, Session


class SessionState(Protocol):
    shared: bool

    async def begin(self, session: Session, replay_key: str) -> tuple[int, int]:
        """Claim the call's (step, occurrence of `replay_key`); refreshes `session.pinned`
        and `session.side_effects`."""

    async def save_pins(self, session: Session) -> None: ...

    async def save_side_effects(self, session: Session, marks: set[tuple[str, str]]) -> None:
        """Share new side-effect marks ((channel, server)) of the session."""


class LocalSessionState:
    shared = False

    async def begin(self, session: Session, replay_key: str) -> tuple[int, int]:
        return claim_locally(session, replay_key)

    async def save_pins(self, session: Session) -> None:
        return None

    async def save_side_effects(self, session: Session, marks: set[tuple[str, str]]) -> None:
        return None


def claim_locally(session: Session, replay_key: str) -> tuple[int, int]:
    step = session.steps
    session.steps += 1
    occurrence = session.occurrences[replay_key] = session.occurrences.get(replay_key, 0) + 1
    return step, occurrence


class RedisSessionState:
    shared = True

    def __init__(self, store, *, ttl_s: float) -> None:
        self.store = store  # a RedisStore: its client, prefix and error translation
        self.ttl_s = int(max(ttl_s, 60))

    def _keys(self, session_id: str) -> tuple[str, str, str, str]:
        return tuple(self.store._key("sess", session_id, part) for part in ("steps", "occ", "pins", "fx"))  # type: ignore[return-value]

    async def begin(self, session: Session, replay_key: str) -> tuple[int, int]:
        steps, occurrences, pins, effects = self._keys(session.id)

        async def work(r):
            pipe = r.pipeline(transaction=True)
            pipe.incr(steps)
            pipe.hincrby(occurrences, replay_key, 1)
            pipe.hgetall(pins)
            pipe.smembers(effects)
            for key in (steps, occurrences, pins, effects):
                pipe.expire(key, self.ttl_s)
            return await pipe.execute()

        claimed_steps, occurrence, pinned, marks = (await self.store._run("claiming a session step", work))[:4]
        session.steps = int(claimed_steps)
        session.occurrences[replay_key] = int(occurrence)
        session.pinned = {tuple(field.split("\x1f", 1)): Route(route) for field, route in pinned.items()}  # type: ignore[misc]
        # Marks only grow: this replica's own (kept if Redis missed one) and every replica's.
        session.side_effects.update(tuple(mark.split("\x1f", 1)) for mark in marks)  # type: ignore[misc]
        return int(claimed_steps) - 1, int(occurrence)

    async def save_pins(self, session: Session) -> None:
        pins = self._keys(session.id)[2]
        mapping = {f"{channel}\x1f{server}": str(route) for (channel, server), route in session.pinned.items()}
        if mapping:
            await self.store._run("saving session pins", lambda r: r.hset(pins, mapping=mapping))

    async def save_side_effects(self, session: Session, marks: set[tuple[str, str]]) -> None:
        effects = self._keys(session.id)[3]
        members = [f"{channel}\x1f{server}" for channel, server in marks]
        if members:

            async def work(r):
                pipe = r.pipeline(transaction=True)
                pipe.sadd(effects, *members)
                pipe.expire(effects, self.ttl_s)
                return await pipe.execute()

            await self.store._run("sharing side-effect marks", work)
