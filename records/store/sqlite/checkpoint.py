"""WAL checkpoints in their own thread, beside the writer.

A checkpoint copies committed pages from the WAL into the database file (and
syncs both). SQLite's automatic checkpoint runs inside the commit that crosses its
threshold: the records of that batch, and every record queued behind it, wait
for it, and the writer thread spends about a third of its time there under load.
Here a thread with its own connection runs a PASSIVE checkpoint (it never blocks a
writer, of this process or another) once the writer has committed `every_rows`
records since the last, so the writer's work and the checkpoint's I/O overlap.
Counting records, not commits: under load a commit carries dozens of records and
the WAL grows fast; an agent making one call at a time commits one record at a
time, and a checkpoint (two syncs) every few calls would only add to its latency. One checkpoint
runs at a time; commits made meanwhile ask for one more, not one each.

A passive checkpoint cannot restart the WAL while commits keep coming; the
writer's own automatic checkpoint stays on (`WRITER_AUTOCHECKPOINT` pages) and
bounds the WAL: by then this thread has copied most pages, so it is short.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable

log = logging.getLogger("simroute.records")

WRITER_AUTOCHECKPOINT = 4000  # pages (4 KiB each): the WAL's bound, ~16 MB


class Checkpointer:
    def __init__(self, connect: Callable[[], sqlite3.Connection], *, every_rows: int = 256) -> None:
        self._connect = connect
        self.every_rows = every_rows
        self.checkpoints = 0  # completed (tests, diagnostics)
        self._rows = 0
        self._wanted = threading.Event()
        self._stopping = False
        self._thread = threading.Thread(target=self._serve, name="simroute-store-checkpoint", daemon=True)
        self._thread.start()

    def committed(self, rows: int) -> None:
        """Called by the writer thread after each commit of `rows` records (cheap: a counter)."""
        self._rows += rows
        if self._rows >= self.every_rows:
            self._rows = 0
            self._wanted.set()

    def close(self) -> None:
        self._stopping = True
        self._wanted.set()
        self._thread.join()

    def _serve(self) -> None:
        db: sqlite3.Connection | None = None
        while True:
            self._wanted.wait()
            self._wanted.clear()
            if self._stopping:
                break
            try:
                if db is None:
                    db = self._connect()
                db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                self.checkpoints += 1
            except sqlite3.Error as exc:  # the writer's automatic checkpoint still bounds the WAL
                log.debug("background checkpoint failed: %s", exc)
        if db is not None:
            db.close()
