"""A thread owning one SQLite connection: every statement runs there, in the order
it was asked for. The event loop hands work over and awaits the result; it never
touches the file, so a database locked by another process stalls no channel.

Records are group-committed in this thread: records queued while it writes one
batch form the next, which it takes the moment it is free — no turn of the event
loop between two commits, so under load the thread is never idle waiting for the
loop, and a record written alone goes straight through (one hop). Each writer's
await ends when its own record is durable, or with its batch's error. A job
(any other statement) queued among records runs after the records before it.
"""

from __future__ import annotations

import asyncio
import queue
import sqlite3
import threading
from collections.abc import Callable, Sequence
from typing import Any

WriteRows = Callable[[sqlite3.Connection, Sequence[dict[str, Any]]], None]

_STOP = object()


class _Job:
    __slots__ = ("work", "loop", "future")

    def __init__(
        self, work: Callable[[sqlite3.Connection], Any], loop: asyncio.AbstractEventLoop, future: asyncio.Future
    ) -> None:
        self.work, self.loop, self.future = work, loop, future


class _Row:
    __slots__ = ("row", "loop", "future")

    def __init__(self, row: dict[str, Any], loop: asyncio.AbstractEventLoop, future: asyncio.Future) -> None:
        self.row, self.loop, self.future = row, loop, future


class StoreThread:
    def __init__(
        self,
        name: str,
        connect: Callable[[], sqlite3.Connection],
        *,
        write_rows: WriteRows | None = None,
        max_batch: int = 256,
    ) -> None:
        self._connect = connect
        self._write_rows = write_rows
        self.max_batch = max_batch
        self._db: sqlite3.Connection | None = None
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    async def run[T](self, work: Callable[[sqlite3.Connection], T]) -> T:
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._queue.put(_Job(work, loop, future))
        return await future

    async def write(self, row: dict[str, Any]) -> None:
        """Durable when it returns: committed with the records queued beside it."""
        if self._write_rows is None:
            raise TypeError("this store thread writes no rows: it was built without write_rows")
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._queue.put(_Row(row, loop, future))
        await future

    def close(self) -> None:
        """Blocking: what is queued runs first, then the connection closes."""
        self._queue.put(_STOP)
        self._thread.join()

    # --- the thread -------------------------------------------------------------------

    def _serve(self) -> None:
        item = None
        while True:
            if item is None:
                item = self._queue.get()
            if item is _STOP:
                break
            if isinstance(item, _Job):
                job, item = item, None
                _settle([job], *self._attempt(job.work))
                continue
            batch, item = self._gather(item)
            rows = [queued.row for queued in batch]
            write_rows = self._write_rows
            assert write_rows is not None  # write() queues rows only when it is set
            _settle(batch, *self._attempt(_batch_writer(write_rows, rows)))
        if self._db is not None:
            self._db.close()

    def _gather(self, first: _Row) -> tuple[list[_Row], Any]:
        """`first` and the rows queued after it; the first other item, to run next."""
        batch = [first]
        while len(batch) < self.max_batch:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return batch, None
            if not isinstance(item, _Row):
                return batch, item
            batch.append(item)
        return batch, None

    def _attempt(self, work: Callable[[sqlite3.Connection], Any]) -> tuple[Any, BaseException | None]:
        try:
            if self._db is None:
                self._db = self._connect()
            return work(self._db), None
        # Boundary: the store thread outlives any statement. Whatever a statement
        # raises goes to the callers awaiting it (they translate it); the thread goes on.
        except BaseException as exc:  # noqa: BLE001
            return None, exc


def _batch_writer(write_rows: WriteRows, rows: list[dict[str, Any]]) -> Callable[[sqlite3.Connection], None]:
    """One batch's write, bound now (the serving loop rebinds `rows` for the next batch)."""
    return lambda db: write_rows(db, rows)


def _settle(items: list[Any], result: Any, error: BaseException | None) -> None:
    """Hand the outcome to each item's event loop: one wake-up per loop."""
    by_loop: dict[asyncio.AbstractEventLoop, list[asyncio.Future]] = {}
    for item in items:
        by_loop.setdefault(item.loop, []).append(item.future)
    for loop, futures in by_loop.items():
        try:
            loop.call_soon_threadsafe(_deliver, futures, result, error)
        except RuntimeError:  # that loop has closed: nobody is waiting any more
            pass


def _deliver(futures: list[asyncio.Future], result: Any, error: BaseException | None) -> None:
    for future in futures:
        if future.done():  # its waiter was cancelled
            continue
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)
