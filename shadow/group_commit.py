"""Group commit: records written at the same time share one transaction (SQLite)
or one pipeline (Redis). Each writer still waits until its own record is durable;
under concurrency the per-record cost of the commit and of the hop to the
store's thread or socket is shared. Rows keep their arrival order."""

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

    def idle(self) -> bool:
        """No row is waiting or being written: a row written elsewhere now overtakes none."""
        return not self._queue and (self._task is None or self._task.done())

    async def write(self, row: dict[str, Any]) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.append((row, future))
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._drain(), name="simroute-group-commit")
        await future

    async def _drain(self) -> None:
        while self._queue:
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
