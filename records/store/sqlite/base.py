"""What every part of the SQLite store stands on: the file, its connections and the
threads that own them (`thread.py`), and the translation of sqlite3's errors into
`StoreError` at this boundary (`_read`, `_write`, `open`). The store's other parts
(writes, reads, replay lookups, the noise table, maintenance) are mixins of this
base; `store.py` puts them together as `SQLiteStore`."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Self

from calls import snapshot_digest
from records.store.protocol import StoreError
from records.store.sqlite.checkpoint import WRITER_AUTOCHECKPOINT, Checkpointer
from records.store.sqlite.schema import migrate
from records.store.sqlite.thread import StoreThread


def create_private_file(path: Path) -> None:
    """Create `path` readable by its owner only (0600), and its folder (0700) when
    simroute makes it; an existing file or folder keeps its mode."""
    if not path.parent.exists():
        path.parent.mkdir(parents=True, mode=0o700)
    if not path.exists():
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))


class SQLiteBase(ABC):
    def __init__(
        self, path: str | Path, *, busy_timeout_ms: int = 100, synchronous: str = "NORMAL", read_only: bool = False
    ) -> None:
        self.path = Path(path)
        self.busy_timeout_ms = busy_timeout_ms
        self.synchronous = synchronous.upper()
        self.read_only = read_only
        self._writer: StoreThread | None = None
        self._reader: StoreThread | None = None
        self._checkpointer: Checkpointer | None = None
        self._snapshots: dict[str, list[dict[str, Any]]] = {}  # server -> tool definitions

    # --- opening -------------------------------------------------------------------------

    async def open(self) -> Self:
        if self._reader is not None:
            return self
        try:
            if not self.read_only:
                create_private_file(self.path)
                self._writer = StoreThread(
                    "simroute-store-writer", self._connect_writer, write_rows=self.upsert_blocking
                )
                await self._writer.run(migrate)
                self._checkpointer = Checkpointer(self._connect_checkpointer)
            elif not self.path.exists():
                raise StoreError(f"no record store at {self.path}")
            self._reader = StoreThread("simroute-store-reader", self._connect_reader)
            self._snapshots = await self._reader.run(_all_snapshots)
        except (sqlite3.Error, OSError) as exc:
            await self.aclose()
            raise StoreError(f"cannot open record store {self.path}: {exc}") from exc
        return self

    def _connect_writer(self) -> sqlite3.Connection:
        db = sqlite3.connect(
            self.path, timeout=self.busy_timeout_ms / 1000, check_same_thread=False, isolation_level=None
        )
        db.execute("PRAGMA journal_mode=WAL")
        db.execute(f"PRAGMA synchronous={self.synchronous}")
        db.execute(f"PRAGMA busy_timeout={self.busy_timeout_ms}")
        # Checkpoints run beside the writer (records/store/sqlite/checkpoint.py); its own is the WAL's bound.
        db.execute(f"PRAGMA wal_autocheckpoint={WRITER_AUTOCHECKPOINT}")
        # Records are written by upsert (an update trigger recounts); should a REPLACE
        # ever delete one, this makes the delete trigger take its counts back.
        db.execute("PRAGMA recursive_triggers=ON")
        return db

    def _connect_checkpointer(self) -> sqlite3.Connection:
        db = sqlite3.connect(
            self.path, timeout=self.busy_timeout_ms / 1000, check_same_thread=False, isolation_level=None
        )
        db.execute(f"PRAGMA synchronous={self.synchronous}")  # how a checkpoint syncs the files
        db.execute("PRAGMA wal_autocheckpoint=0")
        return db

    def _connect_reader(self) -> sqlite3.Connection:
        uri = f"file:{self.path}?mode=ro" if self.read_only else f"file:{self.path}"
        db = sqlite3.connect(uri, uri=True, timeout=5.0, check_same_thread=False, isolation_level=None)
        db.execute("PRAGMA query_only=ON")
        return db

    @property
    def writer(self) -> StoreThread:
        if self._writer is None:
            raise StoreError(f"record store {self.path} is not open for writing")
        return self._writer

    @property
    def reader(self) -> StoreThread:
        if self._reader is None:
            raise StoreError(f"record store {self.path} is not open")
        return self._reader

    @abstractmethod
    def upsert_blocking(self, db: sqlite3.Connection, rows: Sequence[dict[str, Any]]) -> None:
        """In the writer thread: write `rows` in one transaction (`writes.RecordWrites`)."""

    # --- running statements: sqlite3's errors become StoreError here ---------------------

    async def _write[T](self, work: Callable[[sqlite3.Connection], T]) -> T:
        try:
            return await self.writer.run(work)
        except sqlite3.Error as exc:
            raise StoreError(f"record store {self.path}: {exc}") from exc

    async def _read[T](self, work: Callable[[sqlite3.Connection], T]) -> T:
        try:
            return await self.reader.run(work)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read record store {self.path}: {exc}") from exc

    # --- tool snapshots: stored, and held in memory --------------------------------------

    async def save_tool_snapshot(self, server: str, tools: list[dict[str, Any]]) -> str | None:
        """Store an upstream's tool definitions; returns the previous digest when they
        changed, else None."""
        body, digest = snapshot_digest(tools)

        def work(db: sqlite3.Connection) -> str | None:
            row = db.execute("SELECT digest FROM tool_snapshots WHERE server = ?", (server,)).fetchone()
            if row is not None and row[0] == digest:
                return None
            db.execute(
                "INSERT OR REPLACE INTO tool_snapshots (server, digest, ts, tools) VALUES (?,?,?,?)",
                (server, digest, time.time(), body),
            )
            return row[0] if row is not None else None

        previous = await self._write(work)
        self._snapshots[server] = json.loads(body)
        return previous

    def tool_snapshot(self, server: str) -> list[dict[str, Any]] | None:
        """The last known tool definitions of `server` (held in memory: no I/O)."""
        return self._snapshots.get(server)

    async def load_tool_snapshot(self, server: str) -> list[dict[str, Any]] | None:
        return self._snapshots.get(server)

    # --- closing -------------------------------------------------------------------------

    async def aclose(self) -> None:
        for attribute in ("_checkpointer", "_writer", "_reader"):
            connection = getattr(self, attribute)
            if connection is not None:
                setattr(self, attribute, None)
                await asyncio.to_thread(connection.close)


def _all_snapshots(db: sqlite3.Connection) -> dict[str, list[dict[str, Any]]]:
    return {server: json.loads(tools) for server, tools in db.execute("SELECT server, tools FROM tool_snapshots")}
