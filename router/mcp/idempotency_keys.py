"""A retried request with the same idempotency key is answered once: the first request
runs, a retry gets its answer (or waits for it while it runs), on whichever replica
it lands with a Redis store. Episode steps carry the key as the `Idempotency-Key`
header, MCP `tools/call` requests as `params._meta["simroute/idempotency-key"]`. The
key is scoped to the agent session (an episode's, too); the same key with another
action is refused. If the replica running the first request died before answering,
the retry is told so (an infra error): the call may have reached the real side, so
it is not run again."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from calls import Session, SessionSlice
from records.store.protocol import StoreError
from router.mcp.retries import answered_once

if TYPE_CHECKING:
    from records.shared_state.answers_redis import RedisAnswers
    from router.runtime.parts import McpParts
    from router.runtime.replica import ReplicaPresence

log = logging.getLogger("simroute.idempotency")

IDEMPOTENCY_META = "simroute/idempotency-key"  # where a tools/call carries its key: params._meta
KEY = re.compile(r"[\x21-\x7e]{1,200}")  # printable ASCII, as HTTP header values go
WAIT_S = 900.0  # longer than any step's deadline: the first request answers or its replica dies first


def idempotency_key_of(ctx: Any) -> str | None:
    """The key a tools/call request carries in its `_meta` (fastmcp keeps the request's
    `_meta` on its request context, not on the middleware's message), or None."""
    try:
        request = ctx.request_context
    except RuntimeError:  # no request (an in-process call)
        return None
    meta = getattr(request, "meta", None) if request is not None else None
    key = meta.get(IDEMPOTENCY_META) if isinstance(meta, dict) else None
    return None if key is None else str(key)


class IdempotencyError(ValueError):
    """The key is malformed or was used for another action (the message says which)."""


def digest_of(action: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(action, sort_keys=True, default=str).encode()).hexdigest()[:32]


@dataclass(slots=True)
class KeyedAnswers(SessionSlice):
    """A session's answers by idempotency key, in one router (a slice kept in the
    process: it ends with the session, and a session holding it is no episode)."""

    answers: dict[str, Any] = field(default_factory=dict)


class AnsweredOnce:
    def __init__(self, answers: RedisAnswers | None, replica: ReplicaPresence) -> None:
        self.answers = answers  # None: one router, kept in the session (`KeyedAnswers`)
        self.replica = replica

    async def run(
        self, session: Session, key: str, action: dict[str, Any], produce: Callable[[], Awaitable[dict[str, Any]]]
    ) -> dict[str, Any]:
        """`produce()`'s answer (JSON-able), once per `key` in `session` (see the module doc)."""
        if not KEY.fullmatch(key):
            raise IdempotencyError("simroute: an idempotency key is 1-200 printable ASCII characters")
        digest = digest_of(action)
        if self.answers is None:
            answered = session.slice(KeyedAnswers).answers
            kept = answered.get(f"{key}\0digest")
            if kept is not None and kept.result() != digest:
                raise IdempotencyError(f"simroute: idempotency key {key!r} was used for another action in this session")
            if kept is None:
                done: asyncio.Future[str] = asyncio.get_running_loop().create_future()
                done.set_result(digest)
                answered[f"{key}\0digest"] = done
            return await answered_once(answered, key, produce)
        deadline = time.monotonic() + WAIT_S
        while True:
            try:
                held = await self.answers.claim(session.id, key, self.replica.identity, digest)
            except StoreError:
                return await produce()  # Redis unreachable: answered as without a key
            if held is None:
                return await self._first(session, key, digest, produce)
            answer = await self._wait(session, key, digest, held, deadline)
            if answer is not None:
                return answer
            # the first request failed (its key forgotten): this one runs the call

    async def _first(
        self, session: Session, key: str, digest: str, produce: Callable[[], Awaitable[dict[str, Any]]]
    ) -> dict[str, Any]:
        assert self.answers is not None
        try:
            answer = await produce()
        except BaseException:
            await asyncio.shield(self._forget(session, key))  # not an answer: a retry runs the call again
            raise
        try:
            await self.answers.answer(session.id, key, digest, json.dumps(answer))
        except StoreError as exc:  # the call ran: its answer is the agent's; a retry may find the key unanswered
            log.warning("the answer to idempotency key %r not kept (Redis unreachable): %s", key, exc)
        return answer

    async def _forget(self, session: Session, key: str) -> None:
        assert self.answers is not None
        try:
            await self.answers.forget(session.id, key)
        except StoreError:
            pass  # the key expires with its TTL

    async def _wait(
        self, session: Session, key: str, digest: str, held: str | None, deadline: float
    ) -> dict[str, Any] | None:
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
                    f"simroute: the call with idempotency key {key!r} was running on replica {replica}, "
                    "which stopped before answering; it may have reached the real side, so it is not run again"
                )
            await asyncio.sleep(pause)
            pause = min(pause * 2, 0.5)
            held = await self.answers.held(session.id, key)
        return None

    @staticmethod
    def _same_action(key: str, kept: str, digest: str) -> None:
        if kept != digest:
            raise IdempotencyError(f"simroute: idempotency key {key!r} was used for another action in this session")


class IdempotencyLost(RuntimeError):
    """The request holding the key died with its replica before answering."""


def answered_once_by_key(parts: McpParts) -> AnsweredOnce:
    """Kept in Redis with a Redis store (every replica answers a key once), else in the session."""
    return AnsweredOnce(parts.keyed_answers, parts.replica)
