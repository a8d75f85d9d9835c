"""A record written on the event loop itself when nothing else is writing.

An agent making one call at a time waits for each record: through the writer
thread that costs two thread switches and a few loop turns on top of the
statement (measured: about 105 µs against 60 µs for the statement alone). When
no earlier record is waiting, so that nothing can be overtaken, the record is
written here, on the loop, with a connection that never waits for a lock: if
another connection or process holds the write lock, the statement fails at once
and the record takes the usual way (the writer thread, its busy timeout, then the
spool). Concurrent writers still share commits there.

This connection never checkpoints the WAL on commit (a checkpoint can take
milliseconds, too long for the loop); every `checkpoint_every` records the writer
thread is asked for a passive one instead.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

log = logging.getLogger("simroute.records")


class InlineWriter:
    def __init__(
        self,
        path: Path,
        *,
        synchronous: str,
        statement: str,
        values: Callable[[dict[str, Any]], tuple[Any, ...]],
        checkpoint: Callable[[], Awaitable[None]],
        checkpoint_every: int = 1000,
    ) -> None:
        self._db: sqlite3.Connection | None = sqlite3.connect(path, timeout=0, check_same_thread=False, isolation_level=None)
        self._db.execute(f"PRAGMA synchronous={synchronous}")
        self._db.execute("PRAGMA busy_timeout=0")
        self._db.execute("PRAGMA wal_autocheckpoint=0")
        self._db.execute("PRAGMA recursive_triggers=ON")  # the minute counts follow replacements (see the schema)
        self._statement = statement
        self._values = values
        self._checkpoint = checkpoint
        self.checkpoint_every = checkpoint_every
        self.written = 0  # records written here (tests, benchmarks)
        self._checkpointing: asyncio.Task[None] | None = None

    def try_write(self, row: dict[str, Any]) -> bool:
        """Write `row` now, or return False when the write lock is taken (nothing written).
        Other SQLite errors raise as they would in the writer thread."""
        if self._db is None:
            return False
        try:
            self._db.execute(self._statement, self._values(row))
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                return False
            raise
        self.written += 1
        if self.written % self.checkpoint_every == 0 and (self._checkpointing is None or self._checkpointing.done()):
            self._checkpointing = asyncio.get_running_loop().create_task(self._checkpoint_quietly(), name="simroute-store-checkpoint")
        return True

    async def _checkpoint_quietly(self) -> None:
        try:
            await self._checkpoint()
        except Exception as exc:  # the next commit through the writer thread checkpoints anyway
            log.debug("WAL checkpoint skipped: %s", exc)

    async def aclose(self) -> None:
        if self._checkpointing is not None:
            await asyncio.gather(self._checkpointing, return_exceptions=True)
        if self._db is not None:
            db, self._db = self._db, None
            db.close()
