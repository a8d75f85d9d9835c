"""Tool-definition pins in the SQLite store (the rug-pull defence, router/engine/tool_pin_checks.py):
each upstream tool's accepted definition, and the changes later listings showed.
Shared through the file by every process that opens it; `simroute pins accept`
writes here and the routers read it back."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Sequence
from typing import Any

from records.store.sqlite.base import SQLiteBase
from records.store.store_rules import ACCEPTED, SUPERSEDED, ending, pin_of, superseded_by

# The tables: records/store/sqlite/schema.py (version 8).


def _has_pins(db: sqlite3.Connection) -> bool:
    """Whether the file has the pin tables (a file no newer router wrote, opened read-only, has not)."""
    return (
        db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'tool_pin_changes'").fetchone()
        is not None
    )


def _pin(row: tuple) -> dict[str, Any]:
    server, tool, digest, ts, definition = row
    return {"server": server, "tool": tool, "digest": digest, "ts": ts, "definition": json.loads(definition)}


def _change(row: tuple) -> dict[str, Any]:
    status, body = row
    return {**json.loads(body), "status": status}


class ToolPins(SQLiteBase):
    async def pins(self, server: str | None = None) -> list[dict[str, Any]]:
        """The pins (of `server`), by server and tool."""

        def work(db: sqlite3.Connection) -> list[dict[str, Any]]:
            where, args = ("WHERE server = ?", (server,)) if server is not None else ("", ())
            if not _has_pins(db):
                return []
            rows = db.execute(
                f"SELECT server, tool, digest, ts, definition FROM tool_pins {where} ORDER BY server, tool", args
            )
            return [_pin(row) for row in rows]

        return await self._read(work)

    async def add_pins(self, pins: Sequence[dict[str, Any]]) -> None:
        """Pin tools seen for the first time; a tool already pinned (by another process
        first) keeps its pin."""

        def work(db: sqlite3.Connection) -> None:
            db.executemany(
                "INSERT OR IGNORE INTO tool_pins (server, tool, digest, ts, definition) VALUES (?,?,?,?,?)",
                [
                    (p["server"], p["tool"], p["digest"], p["ts"], json.dumps(p["definition"], ensure_ascii=False))
                    for p in pins
                ],
            )

        await self._write(work)

    async def pin_changes(self, server: str | None = None, *, status: str | None = None) -> list[dict[str, Any]]:
        """Changes to pinned tools, oldest first (of `server`, with `status`)."""

        def work(db: sqlite3.Connection) -> list[dict[str, Any]]:
            conditions = [(c, v) for c, v in (("server = ?", server), ("status = ?", status)) if v is not None]
            where = f"WHERE {' AND '.join(c for c, _ in conditions)}" if conditions else ""
            if not _has_pins(db):
                return []
            rows = db.execute(
                f"SELECT status, body FROM tool_pin_changes {where} ORDER BY id", [v for _, v in conditions]
            )
            return [_change(row) for row in rows]

        return await self._read(work)

    async def add_pin_change(self, change: dict[str, Any]) -> bool:
        """Record a pending change; an older pending change of the same tool is superseded.
        False when the same change is already pending (another listing saw it first)."""

        def work(db: sqlite3.Connection) -> bool:
            db.execute("BEGIN IMMEDIATE")
            try:
                key = (change["server"], change["tool"])
                rows = db.execute(
                    "SELECT id, status, body FROM tool_pin_changes "
                    "WHERE server = ? AND tool = ? AND status = 'pending'",
                    key,
                )
                superseded = superseded_by(change, {row[0]: _change(row[1:]) for row in rows})
                if superseded is not None:
                    db.executemany(
                        "UPDATE tool_pin_changes SET status = ? WHERE id = ?", [(SUPERSEDED, i) for i in superseded]
                    )
                    db.execute(
                        "INSERT INTO tool_pin_changes (server, tool, new_digest, "
                        "status, ts, body) VALUES (?,?,?,'pending',?,?)",
                        (*key, change["new_digest"], change["ts"], json.dumps(change, ensure_ascii=False)),
                    )
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
            return superseded is not None

        return await self._write(work)

    async def end_pin_changes(self, server: str, tools: Sequence[str] | None, status: str) -> list[dict[str, Any]]:
        """End the pending changes of `server` (of `tools`; None: all) with `status`;
        `accepted` pins each one's definition. Returns the changes ended."""
        now = time.time()

        def work(db: sqlite3.Connection) -> list[dict[str, Any]]:
            db.execute("BEGIN IMMEDIATE")
            try:
                rows = db.execute(
                    "SELECT id, tool, status, body FROM tool_pin_changes "
                    "WHERE server = ? AND status = 'pending' ORDER BY id",
                    (server,),
                ).fetchall()
                pending = {row[0]: _change(row[2:]) for row in rows}
                ended = [(row_id, pending[row_id]) for row_id in ending(pending, server, tools)]
                for row_id, change in ended:
                    db.execute("UPDATE tool_pin_changes SET status = ? WHERE id = ?", (status, row_id))
                    if status == ACCEPTED:
                        pin = pin_of(change, now)
                        db.execute(
                            "INSERT OR REPLACE INTO tool_pins (server, "
                            "tool, digest, ts, definition) VALUES (?,?,?,?,?)",
                            (
                                pin["server"],
                                pin["tool"],
                                pin["digest"],
                                pin["ts"],
                                json.dumps(pin["definition"], ensure_ascii=False),
                            ),
                        )
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
            return [{**change, "status": status} for _, change in ended]

        return await self._write(work)
