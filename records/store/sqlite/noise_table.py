"""The noise table in the SQLite store: per tool, how many real-vs-real pairs were
compared and how often each path disagreed (`shadow/noise_learner.py` writes it,
the comparison reads it to tell noise from divergence)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from records.store.noise_counts import NoiseStats
from records.store.sqlite.base import SQLiteBase


class NoiseTable(SQLiteBase):
    async def add_noise_observation(self, tool_key: str, disagreeing: Iterable[str], *, name: str = "") -> None:
        paths = sorted(set(disagreeing))

        def work(db: sqlite3.Connection) -> None:
            db.execute("BEGIN IMMEDIATE")
            try:
                db.execute(
                    "INSERT INTO noise_pairs (tool_key, name, pairs) VALUES (?, ?, 1)"
                    " ON CONFLICT(tool_key) DO UPDATE SET pairs = pairs + 1",
                    (tool_key, name or tool_key),
                )
                db.executemany(
                    "INSERT INTO noise_paths (tool_key, path, disagreements) VALUES (?, ?, 1)"
                    " ON CONFLICT(tool_key, path) DO UPDATE SET disagreements = disagreements + 1",
                    [(tool_key, path) for path in paths],
                )
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

        await self._write(work)

    async def noise_stats(self, tool_key: str) -> NoiseStats:
        def work(db: sqlite3.Connection) -> NoiseStats:
            row = db.execute("SELECT pairs FROM noise_pairs WHERE tool_key = ?", (tool_key,)).fetchone()
            paths = db.execute("SELECT path, disagreements FROM noise_paths WHERE tool_key = ?", (tool_key,)).fetchall()
            return NoiseStats(pairs=row[0] if row else 0, disagreements=dict(paths))

        return await self._read(work)

    async def noise_table(self) -> list[tuple[str, str, NoiseStats]]:
        """Every tool's noise counts: (tool key, "server.tool", stats)."""

        def work(db: sqlite3.Connection) -> list[tuple[str, str, NoiseStats]]:
            out = []
            for key, name, pairs in db.execute(
                "SELECT tool_key, name, pairs FROM noise_pairs ORDER BY name"
            ).fetchall():
                paths = db.execute("SELECT path, disagreements FROM noise_paths WHERE tool_key = ?", (key,)).fetchall()
                out.append((key, name, NoiseStats(pairs=pairs, disagreements=dict(paths))))
            return out

        return await self._read(work)
