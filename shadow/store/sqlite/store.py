"""The embedded record store: one SQLite file in WAL mode, off the event loop.

One writer thread and one reader thread each own a connection
(`shadow/store/sqlite/thread.py`): the event loop only awaits their results, so a
database locked by another process stalls no channel; records written at the
same time share a commit. WAL lets several simroute processes share the file; the writer's busy
timeout is short (`store.busy_timeout_ms`) because a record that cannot be
committed in time goes to the spool instead (see `shadow/store/record_log.py`).

The schema and its migrations: `shadow/store/sqlite/schema.py`; an older file is
migrated in place when opened.
"""

from __future__ import annotations

import asyncio
import json
import logging
import operator
import os
import sqlite3
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from router.types import Observation
from shadow.records import Record
from shadow.store.sqlite import dashboard as dashboard
from shadow.store.protocol import RecordFilter, RecordingInfo, ReplayRow, ReplaySource, StoreBusy, StoreError
from shadow.compare.canonical import snapshot_digest, tool_key
from shadow import record_json
from shadow.compare.noise import NoiseStats
from shadow.store.server_writes import write_span
from shadow.store.sqlite import minute_counts, replay_sources
from shadow.store.sqlite.schema import COLUMNS, SCHEMA_VERSION, migrate
from shadow.store.sqlite.checkpoint import WRITER_AUTOCHECKPOINT, Checkpointer
from shadow.store.sqlite.thread import StoreThread

__all__ = ["SCHEMA_VERSION", "SQLiteStore", "create_private_file"]

log = logging.getLogger("simroute.records")

# An upsert rather than INSERT OR REPLACE: a record written twice (started, then
# complete; pending, then its shadow result) is updated in place instead of deleted
# and inserted again, which spares a delete in every index.
_UPSERT = (
    f"INSERT INTO records ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))}) "
    f"ON CONFLICT(id) DO UPDATE SET {', '.join(f'{c} = excluded.{c}' for c in COLUMNS if c != 'id')}"
)


def _row_values(row: dict[str, Any]) -> tuple[Any, ...]:
    return (
        row["id"], row["ts"], row["session"], row["step"], row["channel"], row["server"], row["tool"], row["call_key"],
        tool_key(row["channel"], row["server"], row["tool"]), row["route"], row["provenance"], row["status"],
        row.get("divergence"), record_json.dumps(row),
        row.get("replay_key") or row["call_key"], row.get("key_scheme") or "", int(row.get("occurrence") or 0),
        row.get("recording"), row.get("owner") or "", row.get("divergence_kind"), _writes_until(row),
    )


# What the minute counts read of a row's values.
_counted = operator.itemgetter(
    *(COLUMNS.index(c) for c in ("id", "ts", "channel", "server", "tool", "route", "provenance", "status", "divergence", "divergence_kind"))
)


# What the replay sources read of a row's values: (replay key, session, ts).
_replay_source = operator.itemgetter(*(COLUMNS.index(c) for c in ("replay_key", "session", "ts")))


def _writes_until(row: dict[str, Any]) -> float | None:
    span = write_span(row)
    return span[1] if span is not None else None


def create_private_file(path: Path) -> None:
    """Create `path` readable by its owner only (0600), and its folder (0700) when
    simroute makes it; an existing file or folder keeps its mode."""
    if not path.parent.exists():
        path.parent.mkdir(parents=True, mode=0o700)
    if not path.exists():
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))


class SQLiteStore:
    def __init__(self, path: str | Path, *, busy_timeout_ms: int = 100, synchronous: str = "NORMAL", read_only: bool = False) -> None:
        self.path = Path(path)
        self.busy_timeout_ms = busy_timeout_ms
        self.synchronous = synchronous.upper()
        self.read_only = read_only
        self._writer: StoreThread | None = None
        self._reader: StoreThread | None = None
        self._checkpointer: Checkpointer | None = None
        self._snapshots: dict[str, list[dict[str, Any]]] = {}  # server -> tool definitions

    # --- opening -------------------------------------------------------------------------

    async def open(self) -> SQLiteStore:
        if self._reader is not None:
            return self
        try:
            if not self.read_only:
                create_private_file(self.path)
                self._writer = StoreThread("simroute-store-writer", self._connect_writer, write_rows=self.upsert_blocking)
                await self._writer.run(migrate)
                self._checkpointer = Checkpointer(self._connect_checkpointer)
            elif not self.path.exists():
                raise StoreError(f"no record store at {self.path}")
            self._reader = StoreThread("simroute-store-reader", self._connect_reader)
            self._snapshots = await self._reader.run(_all_snapshots)
        except (sqlite3.Error, OSError) as exc:
            await self.aclose()
            raise StoreError(f"cannot open record store {self.path}: {exc}") from exc
        return self

    def _connect_writer(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=self.busy_timeout_ms / 1000, check_same_thread=False, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute(f"PRAGMA synchronous={self.synchronous}")
        db.execute(f"PRAGMA busy_timeout={self.busy_timeout_ms}")
        # Checkpoints run beside the writer (shadow/store/sqlite/checkpoint.py); its own is the WAL's bound.
        db.execute(f"PRAGMA wal_autocheckpoint={WRITER_AUTOCHECKPOINT}")
        # Records are written by upsert (an update trigger recounts); should a REPLACE
        # ever delete one, this makes the delete trigger take its counts back.
        db.execute("PRAGMA recursive_triggers=ON")
        return db

    def _connect_checkpointer(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=self.busy_timeout_ms / 1000, check_same_thread=False, isolation_level=None)
        db.execute(f"PRAGMA synchronous={self.synchronous}")  # how a checkpoint syncs the files
        db.execute("PRAGMA wal_autocheckpoint=0")
        return db

    def _connect_reader(self) -> sqlite3.Connection:
        uri = f"file:{self.path}?mode=ro" if self.read_only else f"file:{self.path}"
        db = sqlite3.connect(uri, uri=True, timeout=5.0, check_same_thread=False, isolation_level=None)
        db.execute("PRAGMA query_only=ON")
        return db

    @property
    def writer(self) -> StoreThread:
        if self._writer is None:
            raise StoreError(f"record store {self.path} is not open for writing")
        return self._writer

    @property
    def reader(self) -> StoreThread:
        if self._reader is None:
            raise StoreError(f"record store {self.path} is not open")
        return self._reader

    # --- writing -------------------------------------------------------------------------

    async def upsert(self, rows: Sequence[dict[str, Any]]) -> None:
        if len(rows) == 1:  # one record: shares a transaction with records written at the same time
            await self.writer.write(rows[0])
            return
        await self.writer.run(lambda db: self.upsert_blocking(db, rows))

    def upsert_blocking(self, db: sqlite3.Connection, rows: Sequence[dict[str, Any]]) -> None:
        """In the writer thread: one transaction for `rows` (records written at the same
        time; the spool flushes in bulk), their minute counts included."""
        values = [_row_values(row) for row in rows]
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                # Rowids only grow within the write lock: rows above the last one are the batch's inserts.
                last_rowid = db.execute("SELECT MAX(rowid) FROM records").fetchone()[0] or 0
                db.executemany(_UPSERT, values)
                inserted = {rid for (rid,) in db.execute("SELECT id FROM records WHERE rowid > ?", (last_rowid,))}
                db.executemany(minute_counts.ADD, minute_counts.inserted_counts(map(_counted, values), inserted))
                replay_sources.note(db, map(_replay_source, values))
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
            if self._checkpointer is not None:
                self._checkpointer.committed(len(values))
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                raise StoreBusy(f"record store {self.path} is locked by another writer ({exc})") from exc
            raise StoreError(f"cannot write records to {self.path}: {exc}") from exc
        except sqlite3.Error as exc:
            raise StoreError(f"cannot write records to {self.path}: {exc}") from exc

    async def writable(self) -> bool:
        """Whether a write would go through now, found out without waiting: the spool's
        flusher asks before it holds up new records with a flush."""

        def probe(db: sqlite3.Connection) -> bool:
            db.execute("PRAGMA busy_timeout=0")
            try:
                db.execute("BEGIN IMMEDIATE")
                db.execute("ROLLBACK")
                return True
            except sqlite3.OperationalError:
                return False
            finally:
                db.execute(f"PRAGMA busy_timeout={self.busy_timeout_ms}")

        return await self.writer.run(probe)

    async def interrupt_orphans(self, owner_is_alive: Callable[[str], bool]) -> int:
        def work(db: sqlite3.Connection) -> int:
            rows = db.execute("SELECT id, owner, body FROM records WHERE status = 'started'").fetchall()
            gone = [(rid, body) for rid, owner, body in rows if not owner or not owner_is_alive(owner)]
            for rid, body in gone:
                row = json.loads(body)
                row["status"] = "interrupted"
                row["note"] = "; ".join(n for n in (row.get("note"), "interrupted: its router stopped before the call finished") if n)
                db.execute("UPDATE records SET status = 'interrupted', body = ? WHERE id = ?", (record_json.dumps(row), rid))
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
                    for rid, key in db.execute("SELECT id, replay_key FROM records WHERE session = ? ORDER BY step, ts", (session,)):
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
            prunable = "recording IS NULL AND status NOT IN ('started', 'pending')"
            db.execute("BEGIN IMMEDIATE")
            try:
                if before_ts is not None:
                    removed += db.execute(f"DELETE FROM records WHERE {prunable} AND ts < ?", (before_ts,)).rowcount
                if keep_newest is not None:
                    cutoff = db.execute("SELECT ts FROM records ORDER BY ts DESC LIMIT 1 OFFSET ?", (keep_newest,)).fetchone()
                    if cutoff is not None:
                        removed += db.execute(f"DELETE FROM records WHERE {prunable} AND ts <= ?", (cutoff[0],)).rowcount
                if removed:
                    replay_sources.forget_pruned(db)
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
            return removed

        return await self._write(work)

    # --- the noise table (real-vs-real disagreements per tool and path) --------------------

    async def add_noise_observation(self, tool_key: str, disagreeing, *, name: str = "") -> None:
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

    async def noise_table(self) -> list[tuple[str, str, NoiseStats]]:
        """Every tool's noise counts: (tool key, "server.tool", stats)."""

        def work(db: sqlite3.Connection) -> list[tuple[str, str, NoiseStats]]:
            out = []
            for key, name, pairs in db.execute("SELECT tool_key, name, pairs FROM noise_pairs ORDER BY name").fetchall():
                paths = db.execute("SELECT path, disagreements FROM noise_paths WHERE tool_key = ?", (key,)).fetchall()
                out.append((key, name, NoiseStats(pairs=pairs, disagreements=dict(paths))))
            return out

        return await self._read(work)

    async def save_tool_snapshot(self, server: str, tools: list[dict[str, Any]]) -> str | None:
        """Store an upstream's tool definitions; returns the previous digest when they
        changed, else None."""
        body, digest = snapshot_digest(tools)

        def work(db: sqlite3.Connection) -> str | None:
            row = db.execute("SELECT digest FROM tool_snapshots WHERE server = ?", (server,)).fetchone()
            if row is not None and row[0] == digest:
                return None
            db.execute("INSERT OR REPLACE INTO tool_snapshots (server, digest, ts, tools) VALUES (?,?,?,?)", (server, digest, time.time(), body))
            return row[0] if row is not None else None

        previous = await self._write(work)
        self._snapshots[server] = json.loads(body)
        return previous

    async def _write[T](self, work: Callable[[sqlite3.Connection], T]) -> T:
        try:
            return await self.writer.run(work)
        except sqlite3.Error as exc:
            raise StoreError(f"record store {self.path}: {exc}") from exc

    # --- reading -------------------------------------------------------------------------

    async def _read[T](self, work: Callable[[sqlite3.Connection], T]) -> T:
        try:
            return await self.reader.run(work)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read record store {self.path}: {exc}") from exc

    def tool_snapshot(self, server: str) -> list[dict[str, Any]] | None:
        """The last known tool definitions of `server` (held in memory: no I/O)."""
        return self._snapshots.get(server)

    async def load_tool_snapshot(self, server: str) -> list[dict[str, Any]] | None:
        return self._snapshots.get(server)

    async def replay_session(self, replay_key: str, *, exclude_session: str, source: ReplaySource) -> str | None:
        if source.recording is None:
            sql = "SELECT session FROM replay_sources WHERE replay_key = ? AND session != ? ORDER BY ts DESC LIMIT 1"
            params: tuple[Any, ...] = (replay_key, exclude_session)
        else:
            sql = "SELECT session FROM records WHERE recording = ? AND replay_key = ? AND session != ? ORDER BY ts DESC LIMIT 1"
            params = (source.recording, replay_key, exclude_session)
        row = await self._read(lambda db: db.execute(sql, params).fetchone())
        return row[0] if row else None

    async def replay_row(self, replay_key: str, *, session: str, occurrence: int) -> ReplayRow | None:
        row = await self._read(
            lambda db: db.execute(
                "SELECT id, provenance, body FROM records WHERE replay_key = ? AND session = ? AND occurrence = ? LIMIT 1",
                (replay_key, session, occurrence),
            ).fetchone()
        )
        if row is None:
            return None
        record_id, provenance, body = row
        return ReplayRow(record_id, session, provenance, Observation.from_json(json.loads(body)["observation"]))

    async def examples(
        self, channel: str, server: str, tool: str, *, exclude_session: str, call_key: str | None, limit: int
    ) -> list[dict[str, Any]]:
        key = tool_key(channel, server, tool)

        def work(db: sqlite3.Connection) -> list[str]:
            bodies: list[str] = []
            seen: set[str] = set()
            if call_key is not None:  # the same call (by replay key: volatile arguments left out) first
                for rid, body in _same_call(db, call_key, exclude_session, limit):
                    seen.add(rid)
                    bodies.append(body)
            if len(bodies) < limit:
                for rid, body in db.execute(
                    "SELECT id, body FROM records WHERE tool_key = ? AND provenance = 'real' AND session != ? ORDER BY ts DESC LIMIT ?",
                    (key, exclude_session, limit + len(seen)),
                ):
                    if rid not in seen and len(bodies) < limit:
                        bodies.append(body)
            return bodies

        return [json.loads(body) for body in await self._read(work)]

    async def pending(self, *, limit: int = 1000) -> list[dict[str, Any]]:
        rows = await self._read(
            lambda db: db.execute("SELECT body FROM records WHERE status = 'pending' ORDER BY ts LIMIT ?", (limit,)).fetchall()
        )
        return [json.loads(body) for (body,) in rows]

    async def session_records(self, session: str, *, before_step: int, limit: int = 1000) -> list[Record]:
        rows = await self._read(
            lambda db: db.execute(
                "SELECT body FROM records WHERE session = ? AND step < ? ORDER BY step DESC LIMIT ?", (session, before_step, limit)
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
        rows = await self._read(lambda db: db.execute("SELECT body FROM records WHERE ts >= ? ORDER BY ts, id LIMIT ?", (since, limit)).fetchall())
        return [json.loads(body) for (body,) in rows]

    async def recordings(self) -> list[RecordingInfo]:
        rows = await self._read(
            lambda db: db.execute(
                "SELECT recording, COUNT(DISTINCT session), COUNT(*), MIN(ts), MAX(ts) FROM records"
                " WHERE recording IS NOT NULL GROUP BY recording ORDER BY MAX(ts) DESC"
            ).fetchall()
        )
        return [RecordingInfo(*row) for row in rows]

    async def aggregates(self) -> dict[str, Any]:
        return await self._read(dashboard.totals)

    # --- the dashboard's aggregates and pages (shadow/store/sqlite/dashboard.py) ---------------

    async def overview(self, where: RecordFilter, *, bucket_s: float) -> list[dict[str, Any]]:
        return await self._read(lambda db: dashboard.overview(db, where, bucket_s))

    async def fidelity(self, where: RecordFilter) -> list[dict[str, Any]]:
        return await self._read(lambda db: dashboard.fidelity(db, where))

    async def page(self, where: RecordFilter, *, before: str | None = None, after: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        return await self._read(lambda db: dashboard.page(db, where, before=before, after=after, limit=limit))

    async def record(self, record_id: str) -> dict[str, Any] | None:
        return await self._read(lambda db: dashboard.record(db, record_id))

    async def records_by_prefix(self, prefix: str, *, limit: int = 2) -> list[dict[str, Any]]:
        def work(db: sqlite3.Connection) -> list[dict[str, Any]]:
            rows = db.execute("SELECT body FROM records WHERE id >= ? AND id < ? ORDER BY id LIMIT ?", (prefix, prefix + "g", limit))
            return [json.loads(body) for (body,) in rows.fetchall()]

        return await self._read(work)

    async def count(self) -> int:
        return (await self._read(lambda db: db.execute("SELECT COUNT(*) FROM records").fetchone()))[0]

    # --- closing -------------------------------------------------------------------------

    async def aclose(self) -> None:
        for attribute in ("_checkpointer", "_writer", "_reader"):
            connection = getattr(self, attribute)
            if connection is not None:
                setattr(self, attribute, None)
                await asyncio.to_thread(connection.close)


def _same_call(db: sqlite3.Connection, replay_key: str, exclude_session: str, limit: int) -> list[tuple[str, str]]:
    """(id, body) of the newest real records of `replay_key` in the key's latest
    sessions other than `exclude_session`, newest first."""
    found = []
    sessions = db.execute(
        "SELECT session FROM replay_sources WHERE replay_key = ? AND session != ? ORDER BY ts DESC LIMIT ?",
        (replay_key, exclude_session, replay_sources.SESSIONS_PER_KEY),
    ).fetchall()
    for (session,) in sessions:
        found += db.execute(
            "SELECT ts, id, body FROM records WHERE session = ? AND replay_key = ? AND provenance = 'real' ORDER BY occurrence DESC LIMIT ?",
            (session, replay_key, limit),
        ).fetchall()
    found.sort(key=lambda row: row[0], reverse=True)
    return [(rid, body) for _, rid, body in found[:limit]]


def _readable_records(bodies) -> list[Record]:
    """Records from stored bodies; one that does not read back is left out (logged), so
    a bad record never takes its neighbours with it."""
    records = []
    for body in bodies:
        try:
            records.append(Record.from_json(json.loads(body)))
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            log.error("a stored record does not read back and is skipped: %s: %s", type(exc).__name__, exc)
    return records


def _all_snapshots(db: sqlite3.Connection) -> dict[str, list[dict[str, Any]]]:
    return {server: json.loads(tools) for server, tools in db.execute("SELECT server, tools FROM tool_snapshots")}
