"""The embedded record store: one SQLite file in WAL mode.

WAL with a busy timeout lets several simroute processes share one file. A
record is committed before the agent sees the result it describes.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from pathlib import Path
from typing import Any

from router.types import Observation
from shadow.canonical import tool_key
from shadow.records import Record

_SCHEMA = """
CREATE TABLE IF NOT EXISTS records (
    id TEXT PRIMARY KEY,
    ts REAL NOT NULL,
    session TEXT NOT NULL,
    step INTEGER NOT NULL,
    channel TEXT NOT NULL,
    server TEXT NOT NULL,
    tool TEXT NOT NULL,
    call_key TEXT NOT NULL,
    tool_key TEXT NOT NULL,
    route TEXT NOT NULL,
    provenance TEXT NOT NULL,
    status TEXT NOT NULL,
    divergence REAL,
    body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS records_by_key ON records (call_key, provenance, session, step);
CREATE INDEX IF NOT EXISTS records_by_tool ON records (tool_key, provenance, ts);
CREATE INDEX IF NOT EXISTS records_by_session ON records (session, step);
CREATE INDEX IF NOT EXISTS records_pending ON records (status) WHERE status = 'pending';
CREATE TABLE IF NOT EXISTS tool_snapshots (
    server TEXT PRIMARY KEY,
    digest TEXT NOT NULL,
    ts REAL NOT NULL,
    tools TEXT NOT NULL
);
"""


class StoreError(RuntimeError):
    """The record store could not be opened, read or written."""


class SQLiteStore:
    def __init__(self, path: str | Path, *, busy_timeout_s: float = 10.0, synchronous: str = "NORMAL") -> None:
        self.path = Path(path)
        self.busy_timeout_s = busy_timeout_s
        self.synchronous = synchronous.upper()
        self._db: sqlite3.Connection | None = None

    def open(self) -> SQLiteStore:
        if self._db is not None:
            return self
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, timeout=self.busy_timeout_s, check_same_thread=False, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(f"PRAGMA synchronous={self.synchronous}")
            db.execute(f"PRAGMA busy_timeout={int(self.busy_timeout_s * 1000)}")
            # Checkpoint the WAL less often: fewer long commits on the agent's path.
            db.execute("PRAGMA wal_autocheckpoint=4000")
            db.executescript(_SCHEMA)
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"cannot open record store {self.path}: {exc}") from exc
        self._db = db
        return self

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            self.open()
        assert self._db is not None
        return self._db

    def append(self, record: Record) -> None:
        self.append_raw(record.to_json())

    def append_raw(self, row: dict[str, Any]) -> None:
        """Insert one record given as its JSON object; inserting an id twice is a no-op
        (so a spool can be flushed again after a crash mid-flush)."""
        try:
            self.db.execute(
                "INSERT OR IGNORE INTO records (id, ts, session, step, channel, server, tool, call_key, tool_key,"
                " route, provenance, status, divergence, body) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    row["id"], row["ts"], row["session"], row["step"], row["channel"], row["server"],
                    row["tool"], row["call_key"], tool_key(row["channel"], row["server"], row["tool"]),
                    row["route"], row["provenance"], row["status"],
                    row["divergence"], json.dumps(row, ensure_ascii=False, default=str),
                ),
            )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot write record {row.get('id')} to {self.path}: {exc}") from exc

    def update(self, record: Record) -> None:
        """Rewrite a record in place (shadow results arriving later)."""
        row = record.to_json()
        try:
            self.db.execute(
                "UPDATE records SET status=?, divergence=?, body=? WHERE id=?",
                (row["status"], row["divergence"], json.dumps(row, ensure_ascii=False, default=str), row["id"]),
            )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot update record {record.id} in {self.path}: {exc}") from exc

    def replay_observation(self, call_key: str, *, exclude_session: str, occurrence: int) -> tuple[Observation, str] | None:
        """The `occurrence`-th (1-based) real observation of `call_key` in the most
        recent other session that made that call, with that record's id."""
        rows = self.db.execute(
            """
            WITH source AS (
                SELECT session FROM records
                WHERE call_key = ? AND provenance = 'real' AND session != ?
                GROUP BY session ORDER BY MAX(ts) DESC LIMIT 1
            )
            SELECT id, body FROM records
            WHERE call_key = ? AND provenance = 'real' AND session = (SELECT session FROM source)
            ORDER BY step LIMIT 1 OFFSET ?
            """,
            (call_key, exclude_session, call_key, occurrence - 1),
        ).fetchall()
        if not rows:
            return None
        record_id, body = rows[0]
        return Observation.from_json(json.loads(body)["observation"]), record_id

    def real_records_of_tool(self, channel: str, server: str, tool: str, *, exclude_session: str) -> list[dict[str, Any]]:
        """Every real record of one tool from other sessions, newest session activity first."""
        rows = self.db.execute(
            "SELECT body FROM records WHERE tool_key = ? AND provenance = 'real' AND session != ? ORDER BY ts DESC",
            (tool_key(channel, server, tool), exclude_session),
        ).fetchall()
        return [json.loads(body) for (body,) in rows]

    def recent(self, *, limit: int | None = None, session: str | None = None, channel: str | None = None) -> list[dict[str, Any]]:
        """Records as JSON objects, oldest first; with `limit`, the newest `limit`;
        only one agent session's or one channel's when given."""
        filters = [(column, value) for column, value in (("session", session), ("channel", channel)) if value]
        where = ("WHERE " + " AND ".join(f"{column} = ?" for column, _ in filters)) if filters else ""
        params: list[Any] = [value for _, value in filters]
        sql = f"SELECT body FROM records {where} ORDER BY ts DESC, id DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        rows = self.db.execute(sql, params).fetchall()
        return [json.loads(body) for (body,) in reversed(rows)]

    def save_tool_snapshot(self, server: str, tools: list[dict[str, Any]]) -> str | None:
        """Store an upstream's tool definitions; returns the previous digest when
        they changed, else None."""
        body = json.dumps(tools, sort_keys=True, ensure_ascii=False, default=str)
        digest = hashlib.sha256(body.encode()).hexdigest()[:16]
        try:
            row = self.db.execute("SELECT digest FROM tool_snapshots WHERE server = ?", (server,)).fetchone()
            if row is not None and row[0] == digest:
                return None
            self.db.execute(
                "INSERT OR REPLACE INTO tool_snapshots (server, digest, ts, tools) VALUES (?,?,?,?)",
                (server, digest, time.time(), body),
            )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot store the tool snapshot of {server!r} in {self.path}: {exc}") from exc
        return row[0] if row is not None else None

    def load_tool_snapshot(self, server: str) -> list[dict[str, Any]] | None:
        row = self.db.execute("SELECT tools FROM tool_snapshots WHERE server = ?", (server,)).fetchone()
        return json.loads(row[0]) if row else None

    def pending(self) -> list[Record]:
        """Records whose off-path shadow work has not finished, oldest first."""
        rows = self.db.execute("SELECT body FROM records WHERE status = 'pending' ORDER BY ts").fetchall()
        return [Record.from_json(json.loads(body)) for (body,) in rows]

    def session_records(self, session: str, *, before_step: int) -> list[Record]:
        """A session's records before `before_step`, in order: its history as the agent saw it."""
        rows = self.db.execute(
            "SELECT body FROM records WHERE session = ? AND step < ? ORDER BY step", (session, before_step)
        ).fetchall()
        return [Record.from_json(json.loads(body)) for (body,) in rows]

    def count(self) -> int:
        return self.db.execute("SELECT COUNT(*) FROM records").fetchone()[0]

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    async def aclose(self) -> None:
        self.close()
