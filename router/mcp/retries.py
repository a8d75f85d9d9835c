"""A retried `tools/call` is answered once (an episode's calls: an RL harness retries a
request whose answer it lost, and the call must not run twice).

A retry is the same request id on the same MCP session with the same tool and
arguments; the first answer (or the call still running) serves it. Bounded per session: the oldest are forgotten.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from calls import SessionSlice

REMEMBERED_PER_SESSION = 64


@dataclass(slots=True)
class RetriedRequests(SessionSlice):
    """An episode's answers to its recent tools/call requests, by request (a slice kept
    in the process: a retry reaches the replica that holds the MCP session)."""

    answers: dict[str, Any] = field(default_factory=dict)


def retry_key(ctx: Any, name: str, arguments: dict[str, Any]) -> str | None:
    """None when the request has no id (an in-process step): nothing to retry. Request
    ids restart with every MCP session: the key is the session's (a harness connecting
    once per step reuses ids, and its calls must run)."""
    try:
        request_id, mcp_session = ctx.request_id, ctx.session_id
    except RuntimeError:
        return None
    return f"{mcp_session}\0{request_id}\0{name}\0{json.dumps(arguments, sort_keys=True, default=str)}"


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
