"""What an export already wrote, kept on disk: duplicates collapse however many
examples there are, and memory stays flat (a set in memory would grow with the
store). A temporary SQLite file with a bounded page cache; one digest per key."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path


class SeenOnDisk:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._db: sqlite3.Connection | None = None

    def open(self) -> SeenOnDisk:
        self._db = sqlite3.connect(self.path, isolation_level=None)
        # Scratch data: no journal, no fsync, a small cache (memory stays flat).
        self._db.execute("PRAGMA journal_mode = OFF")
        self._db.execute("PRAGMA synchronous = OFF")
        self._db.execute("PRAGMA cache_size = -8192")
        self._db.execute("CREATE TABLE IF NOT EXISTS seen (digest BLOB PRIMARY KEY) WITHOUT ROWID")
        self._db.execute("BEGIN")
        return self

    def add(self, key: str) -> bool:
        """True when `key` is new (and now remembered); False when it was seen before."""
        assert self._db is not None, "SeenOnDisk.open() first"
        digest = hashlib.blake2b(key.encode(), digest_size=16).digest()
        return self._db.execute("INSERT OR IGNORE INTO seen VALUES (?)", (digest,)).rowcount == 1

    def close(self) -> None:
        if self._db is not None:
            db, self._db = self._db, None
            db.close()
            self.path.unlink(missing_ok=True)
