"""A request answered once per key in this process: the first runs, a retry with the
same key gets its answer (or waits for it while it runs); a failure is no answer (a
retry runs it again). Bounded: the oldest keys are forgotten. Used for a session's
answers by idempotency key in one router (answers.py) and for an episode's retried
`tools/call` requests (router/mcp/retries.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

REMEMBERED_PER_SESSION = 64


async def answered_once[T](answered: dict[str, Any], key: str | None, produce: Callable[[], Awaitable[T]]) -> T:
    if key is None:
        return await produce()
    first = answered.get(key)
    if first is not None:
        return await asyncio.shield(first)
    future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
    future.add_done_callback(lambda done: done.cancelled() or done.exception())  # no "never retrieved" warning
    answered[key] = future
    while len(answered) > REMEMBERED_PER_SESSION:
        answered.pop(next(iter(answered)))
    try:
        result = await produce()
    except asyncio.CancelledError:
        answered.pop(key, None)  # not an answer: a retry runs the call again
        future.cancel()
        raise
    except Exception as exc:
        answered.pop(key, None)
        future.set_exception(exc)
        raise
    future.set_result(result)
    return result
