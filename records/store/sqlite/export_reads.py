"""Reading the whole store a page at a time, for an export: the sessions in id
order, then one session's records in step order. Keyset pages over the session
index (`records_by_session`): each page is one seek, so memory stays flat and the
cost per record stays the same however large the store grows."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator, Callable
from typing import Any

from records.store.sqlite.base import SQLiteBase


class ExportReads(SQLiteBase):
    async def session_ids(self, *, prefix: str = "", page: int = 500) -> AsyncIterator[str]:
        after = None
        while True:
            clauses, params = [], []
            if after is not None:
                clauses.append("session > ?")
                params.append(after)
            if prefix:
                # A range, not LIKE: the index serves it, and `%`/`_` in a token name mean themselves.
                clauses += ["session >= ?", "session < ?"]
                params += [prefix, prefix + "\U0010ffff"]
            where = ("WHERE " + " AND ".join(clauses)) if clauses else ""
            sql = f"SELECT session FROM records {where} GROUP BY session ORDER BY session LIMIT ?"
            rows = await self._read(_query(sql, [*params, page]))
            for (session,) in rows:
                yield session
            if len(rows) < page:
                return
            after = rows[-1][0]

    async def session_rows(self, session: str, *, page: int = 500) -> AsyncIterator[dict[str, Any]]:
        after: tuple[int, str] | None = None
        while True:
            if after is None:
                sql, params = (
                    "SELECT step, id, body FROM records WHERE session = ? ORDER BY step, id LIMIT ?",
                    [session, page],
                )
            else:
                sql = (
                    "SELECT step, id, body FROM records WHERE session = ? AND (step > ? OR (step = ? AND id > ?)) "
                    "ORDER BY step, id LIMIT ?"
                )
                params = [session, after[0], after[0], after[1], page]
            rows = await self._read(_query(sql, params))
            for _, _, body in rows:
                yield json.loads(body)
            if len(rows) < page:
                return
            after = (rows[-1][0], rows[-1][1])


def _query(sql: str, params: list[Any]) -> Callable[[sqlite3.Connection], list[Any]]:
    def work(db: sqlite3.Connection) -> list[Any]:
        return db.execute(sql, params).fetchall()

    return work
