"""Answers kept by idempotency key: a retried request (the same key in the same
session) is answered once, the first request's answer serving every retry; the same
key for another action is refused. `IdempotentAnswers` is the protocol;
`LocalAnswers` (one router) keeps a session's answers in a slice of the session
(`KeyedAnswers`: they end with it); `RedisAnswers` (answers_redis.py) keeps them in
Redis, so a retry is answered once whichever replica it reaches. Which one a router
has is decided where the store is opened (`SharedState.answers`, deployment.py).

The key's shape and the action's digest are the caller's (router/mcp/idempotency_keys.py);
this room keeps the answers and says when a key cannot be answered."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from calls import Session, SessionSlice
from records.errors import RecordsError
from records.shared_state.answered_once import answered_once

Produce = Callable[[], Awaitable[dict[str, Any]]]
# Whether an owner identity is alive, judged now (router/runtime/replica.py: `ReplicaPresence.judge`).
AliveJudge = Callable[[], Awaitable[Callable[[str], bool]]]


class IdempotencyError(RecordsError, ValueError):
    """The key is malformed or was used for another action (the message says which)."""


class IdempotencyLost(RecordsError, RuntimeError):
    """The request holding the key died with its replica before answering."""


def another_action(key: str) -> IdempotencyError:
    return IdempotencyError(f"simroute: idempotency key {key!r} was used for another action in this session")


class IdempotentAnswers(Protocol):
    async def once(self, session: Session, key: str, digest: str, produce: Produce) -> dict[str, Any]:
        """`produce()`'s answer (JSON-able), once per `key` in `session`; `digest`: the
        action's, so the same key for another action raises IdempotencyError."""


@dataclass(slots=True)
class KeyedAnswers(SessionSlice):
    """A session's answers by idempotency key, in one router (a slice kept in the
    process: it ends with the session, and a session holding it is no episode)."""

    answers: dict[str, Any] = field(default_factory=dict)


class LocalAnswers:
    """One router: a session's answers are kept in the session (`KeyedAnswers`)."""

    async def once(self, session: Session, key: str, digest: str, produce: Produce) -> dict[str, Any]:
        answered = session.slice(KeyedAnswers).answers
        kept = answered.get(f"{key}\0digest")
        if kept is not None and kept.result() != digest:
            raise another_action(key)
        if kept is None:
            done: asyncio.Future[str] = asyncio.get_running_loop().create_future()
            done.set_result(digest)
            answered[f"{key}\0digest"] = done
        return await answered_once(answered, key, produce)
