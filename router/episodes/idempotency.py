"""A retried step with the same `Idempotency-Key` is answered once: the first request
runs, a retry gets its answer (or waits for it while it runs), on whichever replica
it lands with a Redis store. The key is scoped to the episode; the same key with
another action is refused (422). If the replica running the first request died
before answering, the retry is told so (an infra error): the step may have reached
the real side, so it is not run again."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from router.mcp.retries import answered_once
from shadow.store.protocol import StoreError

if TYPE_CHECKING:
    from router.episodes.episode import Episode
    from router.runtime.replica import ReplicaPresence
    from router.runtime.runtime import Runtime
    from shadow.store.redis.answers import RedisAnswers

log = logging.getLogger("simroute.episodes")

KEY = re.compile(r"[\x21-\x7e]{1,200}")  # printable ASCII, as HTTP header values go
WAIT_S = 900.0  # longer than any step's deadline: the first request answers or its replica dies first


class IdempotencyError(ValueError):
    """The key is malformed or was used for another action (the message says which)."""


def digest_of(action: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(action, sort_keys=True, default=str).encode()).hexdigest()[:32]


class StepsOnce:
    def __init__(self, answers: RedisAnswers | None, replica: ReplicaPresence) -> None:
        self.answers = answers  # None: one router, kept in the episode's session
        self.replica = replica

    async def run(
        self, episode: Episode, key: str, action: dict[str, Any], produce: Callable[[], Awaitable[dict[str, Any]]]
    ) -> dict[str, Any]:
        if not KEY.fullmatch(key):
            raise IdempotencyError("simroute: an Idempotency-Key is 1-200 printable ASCII characters")
        digest = digest_of(action)
        if self.answers is None:
            answered = episode.session.answered if episode.session.answered is not None else {}
            kept = answered.get(f"idem\0{key}\0digest")
            if kept is not None and kept.result() != digest:
                raise IdempotencyError(f"simroute: Idempotency-Key {key!r} was used for another action in this episode")
            if kept is None:
                done: asyncio.Future[str] = asyncio.get_running_loop().create_future()
                done.set_result(digest)
                answered[f"idem\0{key}\0digest"] = done
            return await answered_once(answered, f"idem\0{key}", produce)
        deadline = time.monotonic() + WAIT_S
        while True:
            try:
                held = await self.answers.claim(episode.session_id, key, self.replica.identity, digest)
            except StoreError:
                return await produce()  # Redis unreachable: answered as without a key
            if held is None:
                return await self._first(episode, key, digest, produce)
            answer = await self._wait(episode, key, digest, held, deadline)
            if answer is not None:
                return answer
            # the first request failed (its key forgotten): this one runs the step

    async def _first(self, episode: Episode, key: str, digest: str, produce: Callable[[], Awaitable[dict[str, Any]]]) -> dict[str, Any]:
        assert self.answers is not None
        try:
            answer = await produce()
        except BaseException:
            await asyncio.shield(self._forget(episode, key))  # not an answer: a retry runs the step again
            raise
        try:
            await self.answers.answer(episode.session_id, key, digest, json.dumps(answer))
        except StoreError as exc:  # the step ran: its answer is the agent's; a retry may find the key unanswered
            log.warning("the answer to Idempotency-Key %r not kept (Redis unreachable): %s", key, exc)
        return answer

    async def _forget(self, episode: Episode, key: str) -> None:
        assert self.answers is not None
        try:
            await self.answers.forget(episode.session_id, key)
        except StoreError:
            pass  # the key expires with its TTL

    async def _wait(self, episode: Episode, key: str, digest: str, held: str | None, deadline: float) -> dict[str, Any] | None:
        """The first request's answer, once it has one; None if it failed (no answer)."""
        assert self.answers is not None
        pause = 0.05
        while held is not None:
            state, _, rest = held.partition("|")
            if state == "done":
                kept_digest, _, answer = rest.partition("|")
                self._same_action(key, kept_digest, digest)
                return json.loads(answer)
            replica, _, kept_digest = rest.partition("|")
            self._same_action(key, kept_digest, digest)
            if not (await self.replica.judge())(replica) or time.monotonic() > deadline:
                raise IdempotencyLost(
                    f"simroute: the step with Idempotency-Key {key!r} was running on replica {replica}, which stopped before "
                    "answering; it may have reached the real side, so it is not run again"
                )
            await asyncio.sleep(pause)
            pause = min(pause * 2, 0.5)
            held = await self.answers.held(episode.session_id, key)
        return None

    @staticmethod
    def _same_action(key: str, kept: str, digest: str) -> None:
        if kept != digest:
            raise IdempotencyError(f"simroute: Idempotency-Key {key!r} was used for another action in this episode")


class IdempotencyLost(RuntimeError):
    """The request holding the key died with its replica before answering."""


def steps_once(runtime: Runtime) -> StepsOnce:
    if runtime.config.store.redis_url is None:
        return StepsOnce(None, runtime.replica)
    from shadow.store.redis.answers import RedisAnswers

    return StepsOnce(RedisAnswers(runtime.store, ttl_s=max(86400.0, 2 * runtime.config.episodes.idle_ttl_s)), runtime.replica)


def lost_answer(episode: Episode, observation: dict[str, Any]) -> dict[str, Any]:
    """A step's answer when the request holding its key died with its replica."""
    info = {
        "episode_id": episode.id,
        "step": episode.steps,
        "route": None,
        "provenance": "none",
        "policy": "idempotency",
        "record_id": None,
        "infra_error": True,
        "simroute_ms": 0.0,
    }
    return {"observation": observation, "reward": None, "done": False, "info": info}
