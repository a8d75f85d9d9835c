"""Records are never lost: written to the store, or to a spool file that cannot jam.

Every record goes to the store first. When the store is busy past its busy
timeout (another process holds the SQLite write lock) or fails, the record goes
to an fsynced JSON-lines spool beside it and the call proceeds; later records
follow it into the spool (order is kept) until a background flush moves the
spool into the store. Spool lines are upserts: a later line for an id replaces
an earlier one (a write-ahead `started` record, then its completion).

A spool that cannot jam:
- several processes share one spool under an exclusive file lock;
- a half-written line (a crash mid-write) is ended before the next line is
  appended, and a line that does not decode is moved to a quarantine file at
  flush time (reported), never blocking the lines after it;
- when even the spool cannot be written (disk full), `RecordError` says so: the
  caller fails the call closed rather than serve it unrecorded.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from records import record_json
from records.record import Record
from records.store.protocol import RecordError, RecordStore, StoreError

log = logging.getLogger("simroute.records")

_FLUSH_EVERY_S = 0.25


class Spool:
    """The spool file: locked appends and locked take-all (blocking; run in a thread)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.quarantine_path = self.path.with_name(self.path.name.replace(".jsonl", "") + ".quarantine.jsonl")

    def append(self, rows: Sequence[dict[str, Any]]) -> None:
        data = "".join(record_json.dumps(row) + "\n" for row in rows).encode()
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                data = b"\n" + data  # end a line a crashed writer left half-written
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)  # releases the lock

    def take(self, apply) -> tuple[int, int]:
        """Under the lock: decode every line, hand the good rows (a later line for an id
        replacing an earlier one) to `apply`, set bad lines aside in the quarantine
        file, empty the spool. If `apply` raises, the spool is left as it was.
        Returns (rows applied, lines quarantined)."""
        try:
            fd = os.open(self.path, os.O_RDWR)
        except FileNotFoundError:
            return 0, 0
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            size = os.fstat(fd).st_size
            if size == 0:
                return 0, 0
            text = os.pread(fd, size, 0).decode("utf-8", errors="replace")
            rows: dict[str, dict[str, Any]] = {}
            bad: list[str] = []
            for line in text.splitlines():
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                    if not isinstance(row, dict) or not isinstance(row.get("id"), str):
                        raise ValueError("not a record")
                except ValueError:
                    bad.append(line)
                    continue
                rows.pop(row["id"], None)  # re-insert: a later line's position wins too
                rows[row["id"]] = row
            if rows:
                apply(list(rows.values()))
            if bad:
                with open(self.quarantine_path, "a", encoding="utf-8") as quarantine:
                    os.chmod(self.quarantine_path, 0o600)
                    quarantine.write("".join(line + "\n" for line in bad))
                    quarantine.flush()
                    os.fsync(quarantine.fileno())
            os.ftruncate(fd, 0)
            os.fsync(fd)
            return len(rows), len(bad)
        finally:
            os.close(fd)

    def quarantined(self) -> int:
        try:
            with open(self.quarantine_path, encoding="utf-8", errors="replace") as quarantine:
                return sum(1 for line in quarantine if line.strip())
        except FileNotFoundError:
            return 0

    def has_lines(self) -> bool:
        try:
            return self.path.stat().st_size > 0
        except FileNotFoundError:
            return False


class RecordLog:
    """The one way records are written (see module doc)."""

    def __init__(self, store: RecordStore, spool_path: Path) -> None:
        self.store = store
        self.spool = Spool(spool_path)
        self.spooled = 0  # records that went to the spool (metrics, tests)
        self.quarantined = 0
        self._lock = asyncio.Lock()
        self._spooling = False  # set while the spool holds lines this process must not overtake
        self._flusher: asyncio.Task[None] | None = None
        # Called after each record is durable: (record, stored in the store, not the spool).
        # Metrics count here; an observer must be quick and must not raise.
        self.observers: list[Callable[..., None]] = []

    async def start(self) -> RecordLog:
        """Report quarantined lines and move what an earlier run spooled into the store."""
        quarantined = await asyncio.to_thread(self.spool.quarantined)
        if quarantined:
            log.error(
                "%d spooled record line(s) could not be read and are set aside in %s (inspect, then delete the file)",
                quarantined,
                self.spool.quarantine_path,
            )
        if await asyncio.to_thread(self.spool.has_lines):
            self._spooling = True
            await self.flush()
        return self

    async def write(self, record: Record) -> bool:
        """Durable before it returns: in the store (True) or in the spool (False).
        Raises RecordError when neither could take it. Records written at the same
        time share the store's commit; while the spool holds records, new ones follow
        them there (order is kept)."""
        stored = await self._write(record)
        for observe in self.observers:
            observe(record, stored=stored)
        return stored

    async def _write(self, record: Record) -> bool:
        row = record.to_json()
        if not self._spooling:
            try:
                await self.store.upsert([row])
                return True
            except StoreError as exc:
                if not self._spooling:
                    log.warning("record store unavailable (%s); spooling records to %s", exc, self.spool.path)
                self._spooling = True
        async with self._lock:
            await self._append([row])
        self._ensure_flusher()
        return False

    async def _append(self, rows: list[dict[str, Any]]) -> None:
        try:
            await asyncio.to_thread(self.spool.append, rows)
        except OSError as exc:
            raise RecordError(
                f"simroute cannot record this call: the record store is unavailable and the spool {self.spool.path} "
                f"cannot be written ({exc.strerror or exc})"
            ) from exc
        self.spooled += len(rows)

    def _ensure_flusher(self) -> None:
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.get_running_loop().create_task(
                self._flush_until_empty(), name="simroute-spool-flush"
            )

    async def _flush_until_empty(self) -> None:
        while self._spooling:
            await asyncio.sleep(_FLUSH_EVERY_S)
            if not await self.store.writable():
                continue  # still locked: new records keep going to the spool, unhindered
            try:
                await self.flush()
            except StoreError as exc:
                log.debug("spool not flushed yet: %s", exc)

    async def flush(self) -> int:
        """Move the spool into the store (one transaction); returns how many rows moved.
        Raises StoreError (the spool is kept) when the store still cannot take them."""
        async with self._lock:
            loop = asyncio.get_running_loop()

            def apply(rows: list[dict[str, Any]]) -> None:
                # Runs in the spool's thread, under the spool's file lock.
                asyncio.run_coroutine_threadsafe(self.store.upsert(rows), loop).result()

            moved, bad = await asyncio.to_thread(self.spool.take, apply)
            self._spooling = False
            if bad:
                self.quarantined += bad
                log.error("%d undecodable spool line(s) moved to %s", bad, self.spool.quarantine_path)
            if moved:
                log.info("flushed %d spooled record(s) into the store", moved)
            return moved

    async def aclose(self) -> None:
        """Try a last flush; what stays spooled is flushed by the next start."""
        if self._flusher is not None:
            self._flusher.cancel()
            await asyncio.gather(self._flusher, return_exceptions=True)
            self._flusher = None
        if self._spooling:
            try:
                await self.flush()
            except StoreError as exc:
                log.warning("records left in the spool %s for the next start: %s", self.spool.path, exc)
