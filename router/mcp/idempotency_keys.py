"""A retried request with the same idempotency key is answered once: the first request
runs, a retry gets its answer (or waits for it while it runs), on whichever replica
it lands with a Redis store. Episode steps carry the key as the `Idempotency-Key`
header, MCP `tools/call` requests as `params._meta["simroute/idempotency-key"]`. The
key is scoped to the agent session (an episode's, too); the same key with another
action is refused. If the replica running the first request died before answering,
the retry is told so (an infra error): the call may have reached the real side, so
it is not run again.

Here: the key's shape and the action's digest. The answers are kept by the shared
state's `IdempotentAnswers` (records/shared_state/answers.py: in the session with one
router, in Redis across replicas)."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from calls import Session
from records.shared_state.answers import IdempotencyError, IdempotentAnswers

if TYPE_CHECKING:
    from router.runtime.parts import McpParts

IDEMPOTENCY_META = "simroute/idempotency-key"  # where a tools/call carries its key: params._meta
KEY = re.compile(r"[\x21-\x7e]{1,200}")  # printable ASCII, as HTTP header values go


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


def digest_of(action: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(action, sort_keys=True, default=str).encode()).hexdigest()[:32]


class AnsweredOnce:
    def __init__(self, answers: IdempotentAnswers) -> None:
        self.answers = answers

    async def run(
        self, session: Session, key: str, action: dict[str, Any], produce: Callable[[], Awaitable[dict[str, Any]]]
    ) -> dict[str, Any]:
        """`produce()`'s answer (JSON-able), once per `key` in `session` (see the module doc)."""
        if not KEY.fullmatch(key):
            raise IdempotencyError("simroute: an idempotency key is 1-200 printable ASCII characters")
        return await self.answers.once(session, key, digest_of(action), produce)


def answered_once_by_key(parts: McpParts) -> AnsweredOnce:
    """Kept in Redis with a Redis store (every replica answers a key once), else in the session."""
    return AnsweredOnce(parts.keyed_answers)
