"""Serialised access to a llama.cpp model: one computation at a time, the agent's
calls before background work, and a cancelled caller that waits for its worker.

A `Llama` object must never be used by two threads at once (a GGML assertion or
a segfault). The model runner holds a context's lock and the `PriorityLock` around
each computation; `run_to_the_end` keeps them held until the worker thread has
really stopped, even when the caller is cancelled.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import threading
from collections.abc import Callable

import anyio


class Cancelled(Exception):
    """Raised inside the worker thread when its caller was cancelled: the work
    stopped early. Never leaves the model runner (see `run_to_the_end`)."""


async def run_to_the_end[T](work: Callable[[], T], cancelled: threading.Event) -> T:
    """Run `work` in a worker thread and return its result. If the caller is
    cancelled (an anyio scope, or a plain `task.cancel()`, which anyio's thread
    shielding does not hold back), set `cancelled` and wait for the thread to stop
    before letting the cancellation through: the caller's locks guard the Llama
    object the thread is still using, and releasing them early lets a second
    thread into it."""
    worker = asyncio.ensure_future(anyio.to_thread.run_sync(work))
    try:
        return await asyncio.shield(worker)
    except asyncio.CancelledError:
        cancelled.set()  # read by the abort callback and the stopping criterion: stops within one graph node
        while not worker.done():
            try:
                await asyncio.wait({worker})
            except asyncio.CancelledError:
                continue  # cancelled again while waiting: the thread still has to stop
        if not worker.cancelled():
            worker.exception()  # retrieved: the caller is gone, its cancellation is what counts
        raise


class PriorityLock:
    """A lock whose waiters are served lowest priority number first, then in order."""

    def __init__(self) -> None:
        self._busy = False
        self._waiters: list[tuple[int, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    async def acquire(self, *, priority: int = 0) -> None:
        if not self._busy and not self._waiters:
            self._busy = True
            return
        granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, (priority, next(self._order), granted))
        try:
            await granted
        except asyncio.CancelledError:
            if granted.done() and not granted.cancelled():
                self.release()  # granted just as we were cancelled: pass it on
            raise

    def release(self) -> None:
        while self._waiters:
            _, _, granted = heapq.heappop(self._waiters)
            if not granted.done():
                granted.set_result(None)  # ownership passes on; stays busy
                return
        self._busy = False
