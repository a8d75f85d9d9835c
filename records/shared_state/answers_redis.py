"""Answers kept by idempotency key, shared by replicas: a retried request (the same
key) is answered once, whichever replica it reaches. One string per key
(`<prefix>:idem:<session>:<key>`): `running|<replica>|<digest>` while the first
request runs, `done|<digest>|<answer JSON>` after; gone if it failed (a retry runs
it again). The digest is the request's: the same key for another request is refused."""

from __future__ import annotations

from records.store.redis.base import RedisBase


class RedisAnswers:
    def __init__(self, store: RedisBase, *, ttl_s: float) -> None:
        self.store = store
        self.ttl_s = int(max(ttl_s, 60))

    def _key(self, session_id: str, key: str) -> str:
        return self.store.key("idem", session_id, key)

    async def claim(self, session_id: str, key: str, replica: str, digest: str) -> str | None:
        """None: claimed, this replica runs the request; else what the key holds."""
        name = self._key(session_id, key)

        async def work(r):
            pipe = r.pipeline(transaction=True)
            pipe.set(name, f"running|{replica}|{digest}", nx=True, ex=self.ttl_s)
            pipe.get(name)
            return await pipe.execute()

        claimed, held = await self.store.run("claiming an idempotency key", work)
        return None if claimed else held

    async def held(self, session_id: str, key: str) -> str | None:
        return await self.store.run("reading an idempotency key", lambda r: r.get(self._key(session_id, key)))

    async def answer(self, session_id: str, key: str, digest: str, answer_json: str) -> None:
        name = self._key(session_id, key)
        await self.store.run(
            "keeping an answer by idempotency key", lambda r: r.set(name, f"done|{digest}|{answer_json}", ex=self.ttl_s)
        )

    async def forget(self, session_id: str, key: str) -> None:
        name = self._key(session_id, key)
        await self.store.run("forgetting an idempotency key", lambda r: r.delete(name))
