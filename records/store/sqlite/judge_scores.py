"""Judge scores in the SQLite store (`simroute judge`, records/judge/): a small table
beside the records, keyed by record id, judge model and pair kind. The first judge
run makes it: a store never judged has none, and the dashboard shows no scores."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from records.store.judge_summary import selected, summarise
from records.store.protocol import RecordFilter
from records.store.sqlite.base import SQLiteBase

TABLE = """
CREATE TABLE IF NOT EXISTS judge_scores (
    record_id TEXT NOT NULL,
    judge TEXT NOT NULL,
    kind TEXT NOT NULL,
    ts REAL NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (record_id, judge, kind)
)
"""
INDEX = "CREATE INDEX IF NOT EXISTS judge_scores_by_ts ON judge_scores (ts)"


class JudgeScores(SQLiteBase):
    async def save_judge_scores(self, rows: list[dict[str, Any]]) -> None:
        """Store scores (records/judge/run.py `score_row`); a record judged again by the same
        model replaces its score."""

        def work(db: sqlite3.Connection) -> None:
            db.execute("BEGIN IMMEDIATE")
            try:
                db.execute(TABLE)
                db.execute(INDEX)
                db.executemany(
                    "INSERT OR REPLACE INTO judge_scores (record_id, judge, kind, ts, body) VALUES (?, ?, ?, ?, ?)",
                    [
                        (row["record_id"], row["judge"], row["kind"], row["ts"], json.dumps(row, ensure_ascii=False))
                        for row in rows
                    ],
                )
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

        await self._write(work)

    async def judge_scores(self, record_id: str) -> list[dict[str, Any]]:
        """Every stored score of one record (any judge, either kind)."""

        def work(db: sqlite3.Connection) -> list[str]:
            if not _has_table(db):
                return []
            return [
                body
                for (body,) in db.execute(
                    "SELECT body FROM judge_scores WHERE record_id = ? ORDER BY judge, kind", (record_id,)
                )
            ]

        return [json.loads(body) for body in await self._read(work)]

    async def judge_summary(self, where: RecordFilter) -> list[dict[str, Any]]:
        """Per tool and judge model, pairs and mean score of each kind, over the scores
        of the records in `where`'s time range (its other filters applied to them)."""

        def work(db: sqlite3.Connection) -> list[str]:
            if not _has_table(db):
                return []
            sql, params = "SELECT body FROM judge_scores WHERE ts >= ?", [where.since]
            if where.until is not None:
                sql, params = sql + " AND ts < ?", [*params, where.until]
            return [body for (body,) in db.execute(sql, params)]

        rows = (json.loads(body) for body in await self._read(work))
        return summarise(row for row in rows if selected(row, where))


def _has_table(db: sqlite3.Connection) -> bool:
    return (
        db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'judge_scores'").fetchone() is not None
    )
