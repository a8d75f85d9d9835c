"""Episode rows shared through Redis (the protocol: episode_rows.py): one hash per
episode's session (`<prefix>:episode:<session id>`). The engine's own per-session
state (steps, pins, perturbation counters, facts) and the records (the world model's
history) are shared already (session_state.py, the record store).

An unreachable Redis does not stop an episode on its replica: the step is counted
locally and the row catches up at the next write."""

from __future__ import annotations

import logging
from typing import Any

from records.shared_state.episode_rows import EpisodeRow
from records.store.protocol import StoreError
from records.store.redis.base import RedisBase

log = logging.getLogger("simroute.episodes")

# The row is written only if no replica wrote one for this id (atomic).
_CREATE = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
for i = 2, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
redis.call('EXPIRE', KEYS[1], ARGV[1])
return 1
"""

# Count a step, never below ARGV[1] + 1: the steps a replica counted alone while Redis
# was away are not numbered again once it is back.
_STEP = """
local n = redis.call('HINCRBY', KEYS[1], 'steps', 1)
local floor = tonumber(ARGV[1]) + 1
if n < floor then redis.call('HSET', KEYS[1], 'steps', floor); n = floor end
return n
"""


class RedisEpisodeRows:
    shared = True

    def __init__(self, store: RedisBase, *, ttl_s: float) -> None:
        self.store = store
        self.ttl_s = int(max(ttl_s, 60))

    def _key(self, session_id: str) -> str:
        return self.store.key("episode", session_id)

    async def create(self, session_id: str, row: EpisodeRow) -> bool:
        """Write a new episode's row; False when the id is taken (on any replica)."""
        key = self._key(session_id)
        pairs = [part for name, value in row.fields().items() for part in (name, value)]
        created = await self.store.run("opening an episode", lambda r: r.eval(_CREATE, 1, key, self.ttl_s, *pairs))
        return bool(created)

    async def load(self, session_id: str) -> EpisodeRow | None:
        found = await self.store.run("reading an episode", lambda r: r.hgetall(self._key(session_id)))
        return EpisodeRow.of(found) if found and "id" in found else None

    async def update(self, session_id: str, **fields: Any) -> None:
        key = self._key(session_id)
        stored = {
            name: ("1" if value else "0") if isinstance(value, bool) else ("" if value is None else str(value))
            for name, value in fields.items()
        }

        async def work(r):
            pipe = r.pipeline(transaction=True)
            pipe.hset(key, mapping=stored)
            pipe.expire(key, self.ttl_s)
            return await pipe.execute()

        try:
            await self.store.run("updating an episode", work)
        except StoreError as exc:
            log.warning("episode state not shared: %s", exc)

    async def step(self, session_id: str, replica: str, *, counted: int) -> tuple[int, str | None]:
        """Count one step (on whichever replica takes it): the episode's step number, and
        why it ended when another replica ended it (None: open). `counted`: the steps this
        replica knows of (it counted alone while Redis was away): the number is above them."""
        key = self._key(session_id)

        async def work(r):
            pipe = r.pipeline(transaction=True)
            pipe.eval(_STEP, 1, key, counted)
            pipe.hset(key, "replica", replica)
            pipe.hget(key, "ended")
            pipe.expire(key, self.ttl_s)
            return await pipe.execute()

        try:
            steps, _, ended, _ = await self.store.run("counting an episode's step", work)
        except StoreError as exc:
            log.warning("episode step not shared: %s", exc)
            return counted + 1, None
        return int(steps), ended or None
