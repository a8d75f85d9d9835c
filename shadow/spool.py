"""Records are never lost: when the store fails, they wait in a local file.

The spool is a JSON-lines file beside the store; it is flushed into the store
before the next record is written once the store answers again.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Protocol

from shadow.records import Record

log = logging.getLogger("simroute.records")


class RecordStore(Protocol):
    def append(self, record: Record) -> None: ...
    def append_raw(self, row: dict) -> None: ...


class SpoolingWriter:
    def __init__(self, store: RecordStore, spool_path: Path, *, errors: tuple[type[Exception], ...]) -> None:
        self.store = store
        self.spool_path = Path(spool_path)
        self.errors = errors
        # Known to be empty after a flush: no file check per record on the hot path.
        self._maybe_spooled = True

    def write(self, record: Record) -> bool:
        """Store the record, or spool it. True when it reached the store."""
        try:
            self.flush()
            self.store.append(record)
            return True
        except self.errors as exc:
            log.error("record store failed (%s); spooling record %s to %s", exc, record.id, self.spool_path)
            self._maybe_spooled = True
            self.spool_path.parent.mkdir(parents=True, exist_ok=True)
            with self.spool_path.open("a", encoding="utf-8") as spool:
                spool.write(record.to_line() + "\n")
                spool.flush()
                os.fsync(spool.fileno())
            return False

    def flush(self) -> int:
        """Move spooled records into the store; returns how many moved."""
        if not self._maybe_spooled:
            return 0
        if not self.spool_path.exists():
            self._maybe_spooled = False
            return 0
        lines = self.spool_path.read_text(encoding="utf-8").splitlines()
        for line in lines:
            if line.strip():
                self.store.append_raw(json.loads(line))
        self.spool_path.unlink()
        self._maybe_spooled = False
        log.info("flushed %d spooled records into the store", len(lines))
        return len(lines)
