"""Where an export's lines go, in the order the plan asks for.

- `InSessionOrder`: each line straight to its file, as the sessions are read
  (sessions as the store lists them, each in step order).
- `HardestFirst`: each file's lines by divergence, the largest first, lines
  without a divergence last, ties in session order. The order can only be known
  once every session was read, and a prompt needs its session's history read in
  step order, so the store cannot be read in divergence order: the lines are
  spooled to a scratch SQLite file instead (an external sort: an index built once
  at the end, read back through a cursor), so memory stays flat however many
  lines there are. The spool takes as much disk as the dataset, until it is written.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, Protocol


class Files:
    """Each (format, split)'s file, opened when its first line comes: a format or split
    without lines leaves no file (an empty JSON-lines file is no dataset: loaders
    raise on it), and the card says it had none."""

    def __init__(self, paths: dict[tuple[str, str], Path]) -> None:
        self.paths = paths
        self.opened: dict[tuple[str, str], IO[str]] = {}

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self.paths)

    def __getitem__(self, key: tuple[str, str]) -> IO[str]:
        file = self.opened.get(key)
        if file is None:
            path = self.paths[key]
            path.parent.mkdir(parents=True, exist_ok=True)
            file = self.opened[key] = path.open("w", encoding="utf-8")
        return file

    def close(self) -> None:
        for file in self.opened.values():
            file.close()


class Lines(Protocol):
    def add(self, name: str, side: str, divergence: float | None, value: Any) -> None:
        """One line of format `name`'s `side` file, from a record of this divergence."""

    def finish(self) -> None:
        """Every line added is in its file."""


def encoded(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False) + "\n"


class InSessionOrder:
    def __init__(self, files: Files) -> None:
        self.files = files

    def add(self, name: str, side: str, divergence: float | None, value: Any) -> None:
        self.files[name, side].write(encoded(value))

    def finish(self) -> None:
        pass


class HardestFirst:
    def __init__(self, files: Files, scratch: Path) -> None:
        self.files = files
        self.numbers = {key: number for number, key in enumerate(files)}  # a small integer per file
        self.path = scratch
        self.db = sqlite3.connect(scratch, isolation_level=None)
        # Scratch data: no journal, no fsync, a bounded page cache; the index build
        # sorts in temporary files, not in memory.
        for pragma in ("journal_mode = OFF", "synchronous = OFF", "cache_size = -8192", "temp_store = FILE"):
            self.db.execute(f"PRAGMA {pragma}")
        # The rowid is the order a line was added in (session order): it breaks ties.
        self.db.execute(
            "CREATE TABLE lines (file INTEGER NOT NULL, undiverged INTEGER "
            "NOT NULL, divergence REAL NOT NULL, line TEXT NOT NULL)"
        )
        self.db.execute("BEGIN")

    def add(self, name: str, side: str, divergence: float | None, value: Any) -> None:
        self.db.execute(
            "INSERT INTO lines VALUES (?, ?, ?, ?)",
            (self.numbers[name, side], divergence is None, 0.0 if divergence is None else divergence, encoded(value)),
        )

    def finish(self) -> None:
        self.db.execute("COMMIT")
        # Built once all lines are in: one sort, instead of an index kept up at every insert.
        self.db.execute("CREATE INDEX hardest ON lines (file, undiverged, divergence DESC)")
        for key, number in self.numbers.items():
            for (line,) in self.ordered(number):
                self.files[key].write(line)
        self.close()

    def ordered(self, number: int) -> Iterator[tuple[str]]:
        return self.db.execute(QUERY, (number,))

    def close(self) -> None:
        self.db.close()
        self.path.unlink(missing_ok=True)


# Walks the index (no sort at read time: see the query plan test), a row at a time.
QUERY = "SELECT line FROM lines INDEXED BY hardest WHERE file = ? ORDER BY undiverged, divergence DESC, rowid"
