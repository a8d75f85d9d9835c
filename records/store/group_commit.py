"""Group commit for the Redis store: records written at the same time share one
pipeline. (The SQLite store batches in its writer thread: records/store/sqlite/thread.py.)
Each writer still waits until its own record is durable; under concurrency the
per-record cost of the round trip is shared. Rows keep their arrival order.

A row written when nothing else is waiting or being written is flushed at once,
without the drain task (an agent making one call at a time pays one hop to the
store, not the extra loop turns of queueing); a row that arrives while it is in
flight queues behind it. One flush at a time, in arrival order."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

Flush = Callable[[list[dict[str, Any]]], Awaitable[None]]


class GroupCommit:
    def __init__(self, flush: Flush, *, max_batch: int = 256) -> None:
        self._flush = flush
        self.max_batch = max_batch
        self._queue: list[tuple[dict[str, Any], asyncio.Future[None]]] = []
        self._task: asyncio.Task[None] | None = None
        self._alone = 0  # rows flushed on their own, not yet durable
        self._flushing = asyncio.Lock()  # one flush at a time: rows land in arrival order

    def idle(self) -> bool:
        """No row is waiting or being written: a row written now overtakes none."""
        return not self._queue and not self._alone and (self._task is None or self._task.done())

    async def write(self, row: dict[str, Any]) -> None:
        if self.idle():
            self._alone += 1
            try:
                async with self._flushing:  # free: nothing else is writing
                    await self._flush([row])
            finally:
                self._alone -= 1
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.append((row, future))
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._drain(), name="simroute-group-commit")
        await future

    async def _drain(self) -> None:
        while self._queue:
            async with self._flushing:  # after a row flushed on its own; rows queued meanwhile join this batch
                batch, self._queue = self._queue[: self.max_batch], self._queue[self.max_batch :]
                try:
                    await self._flush([row for row, _ in batch])
                except BaseException as exc:  # every writer of the batch learns why
                    for _, future in batch:
                        if not future.done():
                            future.set_exception(exc)
                    if isinstance(exc, asyncio.CancelledError):
                        raise
                    continue
            for _, future in batch:
                if not future.done():
                    future.set_result(None)
