"""Agent-session routing state shared through Redis, so an agent session can move
between router replicas (the protocol is `router.engine.session_state.SessionState`):
step and occurrence counters are atomic increments, pins a hash, the side-effect and
diversion marks sets, the stated facts a hash, all read in one round trip per call;
perturbation rules' call numbers a hash of counters, claimed in a second round trip by
calls a plan matches; the pages of paginated listings a hash by cursor (JSON), read
by calls that carry one."""

from __future__ import annotations

import json
from typing import Any

from router.types import Route, Session
from shadow.store.redis.base import RedisBase

# Stated facts: a fact already kept is updated, a new one kept only while the hash
# holds fewer than the limit (ARGV[1]); the rest of ARGV are name, "step\x1fvalue" pairs.
_SAVE_FACTS = """
local limit = tonumber(ARGV[1])
for i = 2, #ARGV, 2 do
  if redis.call('HEXISTS', KEYS[1], ARGV[i]) == 1 or redis.call('HLEN', KEYS[1]) < limit then
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  end
end
return 1
"""

# Claim a step, never below ARGV[1] + 1: the steps a replica claimed alone while Redis
# was away (router/engine/engine.py, _claim) are not claimed again once it is back.
_CLAIM_STEP = """
local n = redis.call('INCR', KEYS[1])
local floor = tonumber(ARGV[1]) + 1
if n < floor then redis.call('SET', KEYS[1], floor); n = floor end
return n
"""


class RedisSessionState:
    shared = True

    def __init__(self, store: RedisBase, *, ttl_s: float) -> None:
        self.store = store  # a RedisStore: its client, prefix and error translation
        self.ttl_s = int(max(ttl_s, 60))

    def _keys(self, session_id: str) -> tuple[str, str, str, str, str]:
        steps, occurrences, pins, effects, diverted = (
            self.store._key("sess", session_id, part) for part in ("steps", "occ", "pins", "fx", "div")
        )
        return steps, occurrences, pins, effects, diverted

    async def begin(self, session: Session, replay_key: str) -> tuple[int, int]:
        steps, occurrences, pins, effects, diverted = self._keys(session.id)
        facts = self.store._key("sess", session.id, "facts")

        async def work(r):
            pipe = r.pipeline(transaction=True)
            pipe.eval(_CLAIM_STEP, 1, steps, session.steps)
            pipe.hincrby(occurrences, replay_key, 1)
            pipe.hgetall(pins)
            pipe.smembers(effects)
            pipe.smembers(diverted)
            pipe.hgetall(facts)
            # The session's backend claims (replicas.py) live as long as the session is used.
            for key in (steps, occurrences, pins, effects, diverted, self.store._key("sess", session.id, "held")):
                pipe.expire(key, self.ttl_s)
            return await pipe.execute()

        claimed_steps, occurrence, pinned, marks, diversions, stated = (await self.store._run("claiming a session step", work))[:6]
        session.steps = int(claimed_steps)
        session.occurrences[replay_key] = int(occurrence)
        session.pinned = {tuple(field.split("\x1f", 1)): Route(route) for field, route in pinned.items()}
        # Marks only grow: this replica's own (kept if Redis missed one) and every replica's.
        session.side_effects.update(_write_mark(mark) for mark in marks)
        # The same for diversions: without them a replica that did not divert would
        # not know the sim pin comes from rehearsal, and a read would go real.
        session.diverted.update(tuple(mark.split("\x1f", 1)) for mark in diversions)
        session.facts.update(_fact(name, stored) for name, stored in stated.items())
        return int(claimed_steps) - 1, int(occurrence)

    async def count(self, session: Session, counters: list[str]) -> list[int]:
        """Claim the next number of each counter, atomically across replicas."""
        key = self.store._key("sess", session.id, "pert")

        async def work(r):
            pipe = r.pipeline(transaction=True)
            for name in counters:
                pipe.hincrby(key, name, 1)
            pipe.expire(key, self.ttl_s)
            return await pipe.execute()

        claimed = (await self.store._run("claiming perturbation call numbers", work))[: len(counters)]
        numbers = [int(n) for n in claimed]
        session.perturbation_counts.update(zip(counters, numbers, strict=True))
        return numbers

    async def save_pages(self, session: Session, pages: dict[str, dict[str, Any]]) -> None:
        key = self.store._key("sess", session.id, "pages")
        mapping = {cursor: json.dumps(page, ensure_ascii=False) for cursor, page in pages.items()}
        session.pages.update(pages)
        if not mapping:
            return

        async def work(r):
            pipe = r.pipeline(transaction=True)
            pipe.hset(key, mapping=mapping)
            pipe.expire(key, self.ttl_s)
            return await pipe.execute()

        await self.store._run("keeping a listing's pages", work)

    async def page(self, session: Session, cursor: str) -> dict[str, Any] | None:
        key = self.store._key("sess", session.id, "pages")
        found = await self.store._run("reading a listing's page", lambda r: r.hget(key, cursor))
        return json.loads(found) if found is not None else session.pages.get(cursor)

    async def save_pins(self, session: Session) -> None:
        pins = self._keys(session.id)[2]
        mapping = {f"{channel}\x1f{server}": str(route) for (channel, server), route in session.pinned.items()}
        if mapping:
            await self.store._run("saving session pins", lambda r: r.hset(pins, mapping=mapping))

    async def save_side_effects(self, session: Session, marks: set[tuple[str, str, str]]) -> None:
        await self._add_marks(self._keys(session.id)[3], marks, "sharing side-effect marks")

    async def save_diverted(self, session: Session, marks: set[tuple[str, str]]) -> None:
        await self._add_marks(self._keys(session.id)[4], marks, "sharing rehearsal diversions")

    async def save_facts(self, session: Session, facts: dict[str, tuple[int, str]], *, limit: int) -> None:
        key = self.store._key("sess", session.id, "facts")
        pairs = [part for name, (step, value) in facts.items() for part in (name, f"{step}\x1f{value}")]
        if pairs:

            async def work(r):
                pipe = r.pipeline(transaction=True)
                pipe.eval(_SAVE_FACTS, 1, key, limit, *pairs)
                pipe.expire(key, self.ttl_s)
                return await pipe.execute()

            await self.store._run("sharing stated facts", work)

    async def _add_marks(self, key: str, marks: set[tuple[str, str]] | set[tuple[str, str, str]], doing: str) -> None:
        members = ["\x1f".join(mark) for mark in marks]
        if members:

            async def work(r):
                pipe = r.pipeline(transaction=True)
                pipe.sadd(key, *members)
                pipe.expire(key, self.ttl_s)
                return await pipe.execute()

            await self.store._run(doing, work)


def _write_mark(mark: str) -> tuple[str, str, str]:
    """(channel, server, tool) of a side-effect mark; a mark written before marks
    named the tool has none (""), which blocks the whole server's recordings."""
    channel, server, tool = (mark.split("\x1f", 2) + ["", ""])[:3]
    return channel, server, tool


def _fact(name: str, stored: str) -> tuple[str, tuple[int, str]]:
    step, _, value = stored.partition("\x1f")
    return name, (int(step) if step.isdigit() else 0, value)
