"""Agent-session state shared through Redis, so an agent session can move between
router replicas (the protocol is `records.shared_state.session_state.SessionState`).

The step and occurrence counters are atomic increments. Each shared slice
(`calls.SessionSlice` with a `key`) is one hash, `sess:<id>:s:<key>`; the
slices named at construction (`loaded`) are read in the same round trip as each
call's claim and merged into the session's own. A save sends only the fields that
changed since the slice was last loaded or saved, every named slice in one
transaction; a slice's `cap` bounds the fields the hash keeps (a field already
there is updated, a new one kept only below the cap, checked in Redis). A counting
slice's counters are a second hash (`...:n`), claimed by HINCRBY. Every key lives
as long as the session is used (`ttl_s` after its last call).
"""

from __future__ import annotations

from collections.abc import Sequence

from calls import CountingSlice, Session, SessionSlice
from records.store.redis.base import RedisBase

# A slice's changed fields: ARGV[1] the cap (0: none), ARGV[2] the seconds to keep the
# key, then field, value pairs. A field already kept is updated; a new one only below the cap.
_SAVE_FIELDS = """
local cap = tonumber(ARGV[1])
for i = 3, #ARGV, 2 do
  if cap == 0 or redis.call('HEXISTS', KEYS[1], ARGV[i]) == 1 or redis.call('HLEN', KEYS[1]) < cap then
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  end
end
redis.call('EXPIRE', KEYS[1], ARGV[2])
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

    def __init__(self, store: RedisBase, *, ttl_s: float, loaded: Sequence[type[SessionSlice]] = ()) -> None:
        self.store = store  # a RedisStore: its client, prefix and error translation
        self.ttl_s = int(max(ttl_s, 60))
        # The slices every call reads (the routing marks policies decide by, the facts).
        self.loaded = tuple(kind for kind in loaded if kind.key)

    def _key(self, session_id: str, part: str) -> str:
        return self.store.key("sess", session_id, part)

    async def begin(self, session: Session, replay_key: str) -> tuple[int, int]:
        steps, occurrences = self._key(session.id, "steps"), self._key(session.id, "occ")
        slices = [self._key(session.id, f"s:{kind.key}") for kind in self.loaded]

        async def work(r):
            pipe = r.pipeline(transaction=True)
            pipe.eval(_CLAIM_STEP, 1, steps, session.steps)
            pipe.hincrby(occurrences, replay_key, 1)
            for key in slices:
                pipe.hgetall(key)
            # The session's backend claims (replicas.py) live as long as the session is used.
            for key in (steps, occurrences, *slices, self._key(session.id, "held")):
                pipe.expire(key, self.ttl_s)
            return await pipe.execute()

        answers = await self.store.run("claiming a session step", work)
        claimed_steps, occurrence = int(answers[0]), int(answers[1])
        session.steps = claimed_steps
        session.occurrences[replay_key] = occurrence
        for kind, stored in zip(self.loaded, answers[2 : 2 + len(self.loaded)], strict=True):
            if stored:
                _merged(session.slice(kind), stored)
        return claimed_steps - 1, occurrence

    async def save(self, session: Session, *kinds: type[SessionSlice]) -> None:
        changes = []
        for kind in kinds or self.loaded:
            found = session.find(kind)
            if found is None or not kind.key:
                continue
            now, before = found.fields(), found.synced or {}
            changed = [part for name, value in now.items() if before.get(name) != value for part in (name, value)]
            if changed:
                changes.append((found, now, self._key(session.id, f"s:{kind.key}"), found.cap() or 0, changed))
        if not changes:
            return

        async def work(r):
            pipe = r.pipeline(transaction=True)
            for _, _, key, cap, changed in changes:
                pipe.eval(_SAVE_FIELDS, 1, key, cap, self.ttl_s, *changed)
            return await pipe.execute()

        await self.store.run("sharing session state", work)
        for found, now, *_ in changes:
            found.synced = now

    async def claim(self, session: Session, kind: type[CountingSlice], counters: list[str]) -> list[int]:
        """Claim the next number of each counter, atomically across replicas."""
        key = self._key(session.id, f"s:{kind.key}:n")

        async def work(r):
            pipe = r.pipeline(transaction=True)
            for name in counters:
                pipe.hincrby(key, name, 1)
            pipe.expire(key, self.ttl_s)
            return await pipe.execute()

        claimed = (await self.store.run("claiming counters", work))[: len(counters)]
        numbers = [int(n) for n in claimed]
        session.slice(kind).counts.update(zip(counters, numbers, strict=True))
        return numbers

    async def read(self, session: Session, kind: type[SessionSlice], name: str) -> str | None:
        key = self._key(session.id, f"s:{kind.key}")
        found = await self.store.run("reading session state", lambda r: r.hget(key, name))
        if found is not None:
            return found
        own = session.find(kind)  # kept on this replica while Redis was away
        return own.field(name) if own is not None else None


def _merged(target: SessionSlice, stored: dict[str, str]) -> None:
    """`stored` merged into `target`; what the shared state holds is then synced, and
    what this replica kept alone (Redis away) is sent with its next save."""
    target.merge(stored)
    target.synced = dict(stored)
