"""Answers kept by idempotency key, shared by replicas: a retried request (the same
key) is answered once, whichever replica it reaches. One string per key
(`<prefix>:idem:<session>:<key>`): `running|<replica>|<digest>` while the first
request runs, `done|<digest>|<answer JSON>` after; gone if it failed (a retry runs
it again). The digest is the request's: the same key for another request is refused.

A retry that finds the key running waits for the answer; if the replica running the
first request died before answering, the retry is told so (`IdempotencyLost`): the
call may have reached the real side, so it is not run again. Redis unreachable: the
request is answered as without a key."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any

from calls import Session
from records.shared_state.answers import AliveJudge, IdempotencyLost, Produce, another_action
from records.store.protocol import StoreError
from records.store.redis.base import RedisBase

log = logging.getLogger("simroute.idempotency")

WAIT_S = 900.0  # longer than any step's deadline: the first request answers or its replica dies first


class RedisAnswers:
    def __init__(self, store: RedisBase, *, ttl_s: float, replica: str, alive: AliveJudge) -> None:
        self.store = store
        self.ttl_s = int(max(ttl_s, 60))
        self.replica = replica  # this replica's identity: what a key it runs is held by
        self.alive = alive

    async def once(self, session: Session, key: str, digest: str, produce: Produce) -> dict[str, Any]:
        deadline = time.monotonic() + WAIT_S
        while True:
            try:
                held = await self.claim(session.id, key, self.replica, digest)
            except StoreError:
                return await produce()  # Redis unreachable: answered as without a key
            if held is None:
                return await self._first(session, key, digest, produce)
            answer = await self._wait(session, key, digest, held, deadline)
            if answer is not None:
                return answer
            # the first request failed (its key forgotten): this one runs the call

    async def _first(self, session: Session, key: str, digest: str, produce: Produce) -> dict[str, Any]:
        try:
            answer = await produce()
        except BaseException:
            await asyncio.shield(self._forget(session, key))  # not an answer: a retry runs the call again
            raise
        try:
            await self.answer(session.id, key, digest, json.dumps(answer))
        except StoreError as exc:  # the call ran: its answer is the agent's; a retry may find the key unanswered
            log.warning("the answer to idempotency key %r not kept (Redis unreachable): %s", key, exc)
        return answer

    async def _forget(self, session: Session, key: str) -> None:
        try:
            await self.forget(session.id, key)
        except StoreError:
            pass  # the key expires with its TTL

    async def _wait(
        self, session: Session, key: str, digest: str, held: str | None, deadline: float
    ) -> dict[str, Any] | None:
        """The first request's answer, once it has one; None if it failed (no answer)."""
        pause = 0.05
        while held is not None:
            state, _, rest = held.partition("|")
            if state == "done":
                kept_digest, _, answer = rest.partition("|")
                _same_action(key, kept_digest, digest)
                return json.loads(answer)
            replica, _, kept_digest = rest.partition("|")
            _same_action(key, kept_digest, digest)
            if not (await self.alive())(replica) or time.monotonic() > deadline:
                raise IdempotencyLost(
                    f"simroute: the call with idempotency key {key!r} was running on replica {replica}, "
                    "which stopped before answering; it may have reached the real side, so it is not run again"
                )
            await asyncio.sleep(pause)
            pause = min(pause * 2, 0.5)
            held = await self.held(session.id, key)
        return None

    # --- the key in Redis ----------------------------------------------------------------

    def _key(self, session_id: str, key: str) -> str:
        return self.store.key("idem", session_id, key)

    async def claim(self, session_id: str, key: str, replica: str, digest: str) -> str | None:
        """None: claimed, `replica` runs the request; else what the key holds."""
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


def _same_action(key: str, kept: str, digest: str) -> None:
    if kept != digest:
        raise another_action(key)
