"""Keeping the SQLite store's records true over time: records left `started` by a
router that died are marked interrupted, replay keys are recomputed when the key
configuration changes, and old records are pruned (named recordings never)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from typing import Any

from records import record_json
from records.store.sqlite import replay_sources
from records.store.sqlite.base import SQLiteBase
from records.store.store_rules import PRUNABLE_SQL, interrupt, orphaned


class StoreMaintenance(SQLiteBase):
    async def interrupt_orphans(self, owner_is_alive: Callable[[str], bool]) -> int:
        def work(db: sqlite3.Connection) -> int:
            rows = db.execute("SELECT id, owner, body FROM records WHERE status = 'started'").fetchall()
            gone = [(rid, body) for rid, owner, body in rows if orphaned(owner, owner_is_alive)]
            for rid, body in gone:
                row = interrupt(json.loads(body))
                db.execute(
                    "UPDATE records SET status = 'interrupted', body = ? WHERE id = ?", (record_json.dumps(row), rid)
                )
            return len(gone)

        return await self._write(work)

    async def rekey(self, scheme: str, replay_key_of: Callable[[dict[str, Any]], str]) -> int:
        def work(db: sqlite3.Connection) -> int:
            current = db.execute("SELECT value FROM meta WHERE name = 'key_scheme'").fetchone()
            if current is not None and current[0] == scheme:
                return 0
            db.execute("BEGIN IMMEDIATE")
            try:
                changed = 0
                sessions: set[str] = set()
                for rid, session, old_key, body in db.execute(
                    "SELECT id, session, replay_key, body FROM records WHERE key_scheme != ?", (scheme,)
                ).fetchall():
                    new_key = replay_key_of(json.loads(body))
                    db.execute("UPDATE records SET replay_key = ?, key_scheme = ? WHERE id = ?", (new_key, scheme, rid))
                    if new_key != old_key:
                        changed += 1
                        sessions.add(session)
                for session in sessions:  # occurrences count per (session, replay key), in step order
                    counts: dict[str, int] = {}
                    updates = []
                    for rid, key in db.execute(
                        "SELECT id, replay_key FROM records WHERE session = ? ORDER BY step, ts", (session,)
                    ):
                        counts[key] = counts.get(key, 0) + 1
                        updates.append((counts[key], rid))
                    db.executemany("UPDATE records SET occurrence = ? WHERE id = ?", updates)
                if changed:
                    replay_sources.rebuild(db)
                db.execute("INSERT OR REPLACE INTO meta (name, value) VALUES ('key_scheme', ?)", (scheme,))
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
            return changed

        return await self._write(work)

    async def prune(self, *, before_ts: float | None = None, keep_newest: int | None = None) -> int:
        """Delete finished records older than `before_ts` and beyond the newest
        `keep_newest`; records of named recordings are never pruned."""

        def work(db: sqlite3.Connection) -> int:
            removed = 0
            prunable = PRUNABLE_SQL  # the rule: records/store/store_rules.py
            db.execute("BEGIN IMMEDIATE")
            try:
                if before_ts is not None:
                    removed += db.execute(f"DELETE FROM records WHERE {prunable} AND ts < ?", (before_ts,)).rowcount
                if keep_newest is not None:
                    cutoff = db.execute(
                        "SELECT ts FROM records ORDER BY ts DESC LIMIT 1 OFFSET ?", (keep_newest,)
                    ).fetchone()
                    if cutoff is not None:
                        removed += db.execute(
                            f"DELETE FROM records WHERE {prunable} AND ts <= ?", (cutoff[0],)
                        ).rowcount
                if removed:
                    replay_sources.forget_pruned(db)
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
            return removed

        return await self._write(work)
