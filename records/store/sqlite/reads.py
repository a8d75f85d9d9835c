"""Reading records from the SQLite store: pending shadow work, a session's history,
filtered listings for the command line, what the learned router learns from, the
writes the noise learner asks about, recordings, and the dashboard's aggregates
and pages (`dashboard.py` holds their SQL)."""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from records.record import Record
from records.store.namespaces import sql_clause
from records.store.protocol import RecordFilter, RecordingInfo
from records.store.sqlite import dashboard
from records.store.sqlite.base import SQLiteBase

log = logging.getLogger("simroute.records")


class RecordReads(SQLiteBase):
    async def pending(self, *, limit: int = 1000) -> list[dict[str, Any]]:
        rows = await self._read(
            lambda db: db.execute(
                "SELECT body FROM records WHERE status = 'pending' ORDER BY ts LIMIT ?", (limit,)
            ).fetchall()
        )
        return [json.loads(body) for (body,) in rows]

    async def session_records(self, session: str, *, before_step: int, limit: int = 1000) -> list[Record]:
        rows = await self._read(
            lambda db: db.execute(
                "SELECT body FROM records WHERE session = ? AND step < ? ORDER BY step DESC LIMIT ?",
                (session, before_step, limit),
            ).fetchall()
        )
        return _readable_records(body for (body,) in reversed(rows))

    async def recent(self, *, limit: int | None = None, **filters: Any) -> list[dict[str, Any]]:
        """Records as JSON objects, oldest first; with `limit`, the newest `limit`.
        Filters: session, channel, route, tool, status (equality), since (a timestamp),
        recording."""
        clauses, params = [], []
        for column in ("session", "channel", "server", "route", "tool", "status", "recording"):
            value = filters.get(column)
            if value:
                clauses.append(f"{column} = ?")
                params.append(value)
        if filters.get("since") is not None:
            clauses.append("ts >= ?")
            params.append(float(filters["since"]))
        if filters.get("divergent"):
            clauses.append("divergence > 0")
        where = ("WHERE " + " AND ".join(clauses)) if clauses else ""
        sql = f"SELECT body FROM records {where} ORDER BY ts DESC, id DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        rows = await self._read(lambda db: db.execute(sql, params).fetchall())
        return [json.loads(body) for (body,) in reversed(rows)]

    async def learning_rows(self, *, since: float, limit: int) -> list[dict[str, Any]]:
        rows = await self._read(
            lambda db: db.execute(
                "SELECT body FROM records WHERE ts >= ? ORDER BY ts, id LIMIT ?", (since, limit)
            ).fetchall()
        )
        return [json.loads(body) for (body,) in rows]

    async def writes_between(self, channel: str, server: str, *, since: float, until: float) -> bool:
        """Whether any record of a call that may have written to (channel, server) spans
        a moment from `since` to `until` (by any process writing this file)."""
        row = await self._read(
            lambda db: db.execute(
                "SELECT 1 FROM records WHERE channel = ? AND server = ? AND writes_until >= ? AND ts <= ? LIMIT 1",
                (channel, server, since, until),
            ).fetchone()
        )
        return row is not None

    async def recordings(self, *, namespaces: Sequence[str] | None = None) -> list[RecordingInfo]:
        scope, params = sql_clause(namespaces)
        rows = await self._read(
            lambda db: db.execute(
                "SELECT recording, COUNT(DISTINCT session), COUNT(*), MIN(ts), MAX(ts) FROM records"
                f" WHERE recording IS NOT NULL{' AND ' + scope if scope else ''} "
                "GROUP BY recording ORDER BY MAX(ts) DESC",
                params,
            ).fetchall()
        )
        return [RecordingInfo(*row) for row in rows]

    async def aggregates(self) -> dict[str, Any]:
        return await self._read(dashboard.totals)

    # --- the dashboard's aggregates and pages (records/store/sqlite/dashboard.py) ---------------

    async def overview(self, where: RecordFilter, *, bucket_s: float) -> list[dict[str, Any]]:
        return await self._read(lambda db: dashboard.overview(db, where, bucket_s))

    async def fidelity(self, where: RecordFilter) -> list[dict[str, Any]]:
        return await self._read(lambda db: dashboard.fidelity(db, where))

    async def model_fidelity(self, where: RecordFilter) -> dict[str, Any]:
        return await self._read(lambda db: dashboard.model_fidelity(db, where))

    async def page(
        self, where: RecordFilter, *, before: str | None = None, after: str | None = None, limit: int = 50
    ) -> list[dict[str, Any]]:
        return await self._read(lambda db: dashboard.page(db, where, before=before, after=after, limit=limit))

    async def record(self, record_id: str) -> dict[str, Any] | None:
        return await self._read(lambda db: dashboard.record(db, record_id))

    async def records_by_prefix(self, prefix: str, *, limit: int = 2) -> list[dict[str, Any]]:
        def work(db: sqlite3.Connection) -> list[dict[str, Any]]:
            rows = db.execute(
                "SELECT body FROM records WHERE id >= ? AND id < ? ORDER BY id LIMIT ?", (prefix, prefix + "g", limit)
            )
            return [json.loads(body) for (body,) in rows.fetchall()]

        return await self._read(work)

    async def count(self) -> int:
        return (await self._read(lambda db: db.execute("SELECT COUNT(*) FROM records").fetchone()))[0]


def _readable_records(bodies: Iterable[str]) -> list[Record]:
    """Records from stored bodies; one that does not read back is left out (logged), so
    a bad record never takes its neighbours with it."""
    records = []
    for body in bodies:
        try:
            records.append(Record.from_json(json.loads(body)))
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            log.error("a stored record does not read back and is skipped: %s: %s", type(exc).__name__, exc)
    return records
