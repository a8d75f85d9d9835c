"""Which router replicas are alive, as leases in Redis, and which replica holds a
session's real stateful backend (its shell sandbox, its browser).

A replica renews its lease (a member of one sorted set, scored by when it
expires) every few seconds; one that stops renewing — killed, frozen, its host
gone — is dead once its lease runs out, whichever host it ran on. The live set
is what another replica judges owners by (`records/owners.py`): records left
`started` and containers a dead replica left behind are reaped by a live one.

A backend claim (`sess:<id>:held`, kind -> replica) says where a session's real
sandbox or browser lives: a session served by another replica must not silently
get a fresh one there. The protocols, and one router's: replicas.py."""

from __future__ import annotations

import time

from records.owners import owner_judge
from records.shared_state.replicas import Judges
from records.store.redis.base import RedisBase

# Deletes a claim only when it is still this replica's (another may hold it now).
_RELEASE = """
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then
  return redis.call('HDEL', KEYS[1], ARGV[1])
end
return 0
"""


class RedisReplicaLeases:
    renews = True

    def __init__(self, store: RedisBase, *, lease_s: float) -> None:
        self.store = store
        self.lease_s = lease_s

    async def renew(self, replica: str) -> None:
        """This replica's lease, renewed for `lease_s`; expired leases are dropped."""
        key, now = self.store.key("replicas"), time.time()

        async def work(r):
            pipe = r.pipeline(transaction=True)
            pipe.zadd(key, {replica: now + self.lease_s})
            pipe.zremrangebyscore(key, "-inf", now - 86400)  # a day past its end: nobody asks about it any more
            return await pipe.execute()

        await self.store.run("renewing this replica's lease", work)

    async def live(self) -> frozenset[str]:
        """The replicas whose lease has not run out."""
        key = self.store.key("replicas")
        members = await self.store.run("reading replica leases", lambda r: r.zrangebyscore(key, time.time(), "+inf"))
        return frozenset(members)

    async def known(self) -> frozenset[str]:
        """Every replica that held a lease in the last day (alive or not)."""
        key = self.store.key("replicas")
        return frozenset(await self.store.run("reading replica leases", lambda r: r.zrange(key, 0, -1)))

    async def judges(self, replica: str, *, containers: bool) -> Judges:
        live = await self.live() | {replica}
        known = (await self.known() | {replica}) if containers else None
        return owner_judge(live), owner_judge(live, known)

    async def drop(self, replica: str) -> None:
        """A replica stopping cleanly gives its lease up at once."""
        key = self.store.key("replicas")
        await self.store.run("giving up this replica's lease", lambda r: r.zrem(key, replica))


class RedisBackendClaims:
    def __init__(self, store: RedisBase, *, ttl_s: float) -> None:
        self.store = store
        self.ttl_s = int(max(ttl_s, 60))

    async def claim(self, session_id: str, kind: str, replica: str) -> str:
        """Claim `kind` (shell, browser) of the session for `replica`; the replica that
        holds it (this one, or the one that claimed it first)."""
        key = self.store.key("sess", session_id, "held")

        async def work(r):
            pipe = r.pipeline(transaction=True)
            pipe.hsetnx(key, kind, replica)
            pipe.hget(key, kind)
            pipe.expire(key, self.ttl_s)
            return await pipe.execute()

        return (await self.store.run("claiming a session's backend", work))[1]

    async def release(self, session_id: str, kind: str, replica: str) -> None:
        key = self.store.key("sess", session_id, "held")
        await self.store.run("releasing a session's backend", lambda r: r.eval(_RELEASE, 1, key, kind, replica))
