"""The embedded record store: one SQLite file in WAL mode, off the event loop.

One writer thread and one reader thread each own a connection: the event loop
only awaits their results, so a database locked by another process stalls no
channel. WAL lets several simroute processes share the file; the writer's busy
timeout is short (`store.busy_timeout_ms`) because a record that cannot be
committed in time goes to the spool instead (see `shadow/record_log.py`).

The schema carries a version (`PRAGMA user_version`); older files are migrated
in place when opened.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sqlite3
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from router.types import Observation
from shadow.records import Record
from shadow import sqlite_dashboard as dashboard
from shadow.store import RecordFilter, RecordingInfo, ReplayRow, ReplaySource, StoreBusy, StoreError
from shadow.canonical import snapshot_digest, tool_key
from shadow import record_json
from shadow.group_commit import GroupCommit
from shadow.noise import NoiseStats
from shadow.server_writes import write_span

SCHEMA_VERSION = 5

log = logging.getLogger("simroute.records")

_TABLES = """
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
CREATE TABLE IF NOT EXISTS noise_pairs (
    tool_key TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    pairs INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS noise_paths (
    tool_key TEXT NOT NULL,
    path TEXT NOT NULL,
    disagreements INTEGER NOT NULL,
    PRIMARY KEY (tool_key, path)
);
CREATE TABLE IF NOT EXISTS meta (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS tool_snapshots (
    server TEXT PRIMARY KEY,
    digest TEXT NOT NULL,
    ts REAL NOT NULL,
    tools TEXT NOT NULL
);
"""

# Version 2: replay keys and occurrences stored per record (replay is an indexed
# lookup), named recordings, the owner of a record (write-ahead), a status index.
# Every index costs each insert: only those the hot paths and the CLI need.
_V2_COLUMNS = (
    ("replay_key", "TEXT NOT NULL DEFAULT ''"),
    ("key_scheme", "TEXT NOT NULL DEFAULT ''"),
    ("occurrence", "INTEGER NOT NULL DEFAULT 0"),
    ("recording", "TEXT"),
    ("owner", "TEXT NOT NULL DEFAULT ''"),
)
_V2_INDEXES = """
DROP INDEX IF EXISTS records_by_key;
DROP INDEX IF EXISTS records_pending;
CREATE INDEX IF NOT EXISTS records_by_tool ON records (tool_key, provenance, ts);
CREATE INDEX IF NOT EXISTS records_by_session ON records (session, step);
CREATE INDEX IF NOT EXISTS records_by_replay ON records (replay_key, session, occurrence);
CREATE INDEX IF NOT EXISTS records_by_replay_ts ON records (replay_key, ts);
CREATE INDEX IF NOT EXISTS records_by_recording ON records (recording, replay_key, ts) WHERE recording IS NOT NULL;
CREATE INDEX IF NOT EXISTS records_unfinished ON records (status, ts) WHERE status IN ('pending', 'started');
"""

# Version 3: the dashboard's time-range aggregates read only the time index, which
# covers what they group by (no table lookups per record); the divergence kind is a
# column for it. The index replaces the narrower one of version 2 (still `records_by_ts`).
_V3_COLUMNS = (("divergence_kind", "TEXT"),)
_V3_INDEXES = """
DROP INDEX IF EXISTS records_by_ts;
CREATE INDEX records_by_ts ON records (ts, channel, server, tool, route, provenance, divergence, divergence_kind);
"""

# Version 4: per-minute counts kept at write time by triggers, in the same transaction
# as the record (an upsert that replaces a row takes the old row's counts back first:
# recursive_triggers makes REPLACE's delete fire); the dashboard's overview and
# fidelity table and /metrics' totals read them instead of the records. The time
# index is narrow again: the aggregates no longer need it to cover their columns.
# The replay index leads with the session: a commit then dirties the pages of the
# session's own range, not one page per distinct call (its only query names all three).
_KIND_COLUMNS = ("kind_status", "kind_structure", "kind_format", "kind_content", "kind_none")
_COUNTED = "minute, channel, server, tool, route, provenance, status"


def _count(row: str, sign: str) -> str:
    """The statement adding (sign "") or taking back (sign "-") the counts of `row` (NEW or OLD)."""
    kinds = ", ".join(f"{sign}({row}.divergence_kind IS '{column[5:]}')" for column in _KIND_COLUMNS)
    updates = ", ".join(f"{c} = {c} + excluded.{c}" for c in ("calls", "shadowed", "divergent", "divergence_sum", *_KIND_COLUMNS))
    return (
        f"INSERT INTO minute_counts VALUES (CAST({row}.ts / 60 AS INTEGER), {row}.channel, {row}.server, {row}.tool, {row}.route, "
        f"{row}.provenance, {row}.status, {sign}1, {sign}({row}.divergence IS NOT NULL), {sign}COALESCE({row}.divergence > 0, 0), "
        f"{sign}COALESCE({row}.divergence, 0), {kinds}) "
        f"ON CONFLICT DO UPDATE SET {updates};"
    )


_COUNTED_COLUMNS = "ts, channel, server, tool, route, provenance, status, divergence, divergence_kind"


_V4_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS minute_counts (
    minute INTEGER NOT NULL, channel TEXT NOT NULL, server TEXT NOT NULL, tool TEXT NOT NULL,
    route TEXT NOT NULL, provenance TEXT NOT NULL, status TEXT NOT NULL,
    calls INTEGER NOT NULL, shadowed INTEGER NOT NULL, divergent INTEGER NOT NULL, divergence_sum REAL NOT NULL,
    {", ".join(f"{c} INTEGER NOT NULL" for c in _KIND_COLUMNS)},
    PRIMARY KEY ({_COUNTED})
) WITHOUT ROWID;
DELETE FROM minute_counts;
INSERT INTO minute_counts SELECT CAST(ts / 60 AS INTEGER) AS minute, channel, server, tool, route, provenance, status,
    COUNT(*), COUNT(divergence), SUM(COALESCE(divergence > 0, 0)), SUM(COALESCE(divergence, 0)),
    {", ".join(f"SUM(divergence_kind IS '{c[5:]}')" for c in _KIND_COLUMNS)}
    FROM records GROUP BY {_COUNTED};
CREATE TRIGGER IF NOT EXISTS records_counted AFTER INSERT ON records BEGIN {_count("NEW", "")} END;
CREATE TRIGGER IF NOT EXISTS records_uncounted AFTER DELETE ON records BEGIN {_count("OLD", "-")} END;
CREATE TRIGGER IF NOT EXISTS records_recounted AFTER UPDATE OF {_COUNTED_COLUMNS} ON records
    BEGIN {_count("OLD", "-")} {_count("NEW", "")} END;
DROP INDEX IF EXISTS records_by_ts;
CREATE INDEX records_by_ts ON records (ts);
DROP INDEX IF EXISTS records_by_replay;
CREATE INDEX records_by_replay ON records (session, replay_key, occurrence);
"""

# Version 5: when each call that may have written to its server could have done so
# (shadow/server_writes.py): `writes_until` is the end of its span (NULL: the call
# reads only, or never reached the real side). The noise learner asks whether any
# router wrote to a server between two answers; the partial index holds only the
# writes, and its range on `writes_until` starts at the first answer, so the query
# reads the writes since then, never the server's whole history. Records written
# before version 5 are not indexed: no pair the learner holds is that old.
_V5_COLUMNS = (("writes_until", "REAL"),)
_V5_INDEXES = """
CREATE INDEX IF NOT EXISTS records_writes ON records (channel, server, writes_until) WHERE writes_until IS NOT NULL;
"""

_COLUMNS = (
    "id", "ts", "session", "step", "channel", "server", "tool", "call_key", "tool_key", "route", "provenance", "status",
    "divergence", "body", "replay_key", "key_scheme", "occurrence", "recording", "owner", "divergence_kind", "writes_until",
)
# An upsert rather than INSERT OR REPLACE: a record written twice (started, then
# complete; pending, then its shadow result) is updated in place instead of deleted
# and inserted again, which spares a delete in every index.
_UPSERT = (
    f"INSERT INTO records ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))}) "
    f"ON CONFLICT(id) DO UPDATE SET {', '.join(f'{c} = excluded.{c}' for c in _COLUMNS if c != 'id')}"
)


def _row_values(row: dict[str, Any]) -> tuple[Any, ...]:
    return (
        row["id"], row["ts"], row["session"], row["step"], row["channel"], row["server"], row["tool"], row["call_key"],
        tool_key(row["channel"], row["server"], row["tool"]), row["route"], row["provenance"], row["status"],
        row.get("divergence"), record_json.dumps(row),
        row.get("replay_key") or row["call_key"], row.get("key_scheme") or "", int(row.get("occurrence") or 0),
        row.get("recording"), row.get("owner") or "", row.get("divergence_kind"), _writes_until(row),
    )


def _writes_until(row: dict[str, Any]) -> float | None:
    span = write_span(row)
    return span[1] if span is not None else None


class _Connection:
    """One thread owning one SQLite connection: every statement runs there."""

    def __init__(self, name: str, connect: Callable[[], sqlite3.Connection]) -> None:
        self._connect = connect
        self._db: sqlite3.Connection | None = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)

    def db(self) -> sqlite3.Connection:
        if self._db is None:
            self._db = self._connect()
        return self._db

    async def run[T](self, work: Callable[[sqlite3.Connection], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._executor, lambda: work(self.db()))

    def run_blocking[T](self, work: Callable[[sqlite3.Connection], T]) -> T:
        return self._executor.submit(lambda: work(self.db())).result()

    def close(self) -> None:
        def close_db() -> None:
            if self._db is not None:
                self._db.close()
                self._db = None

        self._executor.submit(close_db).result()
        self._executor.shutdown(wait=True)


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
        self._writer: _Connection | None = None
        self._reader: _Connection | None = None
        self._snapshots: dict[str, list[dict[str, Any]]] = {}  # server -> tool definitions
        self._group = GroupCommit(lambda rows: self.writer.run(lambda db: self.upsert_blocking(db, rows)))

    # --- opening -------------------------------------------------------------------------

    async def open(self) -> SQLiteStore:
        if self._reader is not None:
            return self
        try:
            if not self.read_only:
                create_private_file(self.path)
                self._writer = _Connection("simroute-store-writer", self._connect_writer)
                await self._writer.run(_migrate)
            elif not self.path.exists():
                raise StoreError(f"no record store at {self.path}")
            self._reader = _Connection("simroute-store-reader", self._connect_reader)
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
        # Checkpoint the WAL less often: fewer long commits on the agent's path.
        db.execute("PRAGMA wal_autocheckpoint=4000")
        # An upsert that replaces a record fires the delete trigger: its old counts go.
        db.execute("PRAGMA recursive_triggers=ON")
        return db

    def _connect_reader(self) -> sqlite3.Connection:
        uri = f"file:{self.path}?mode=ro" if self.read_only else f"file:{self.path}"
        db = sqlite3.connect(uri, uri=True, timeout=5.0, check_same_thread=False, isolation_level=None)
        db.execute("PRAGMA query_only=ON")
        return db

    @property
    def writer(self) -> _Connection:
        if self._writer is None:
            raise StoreError(f"record store {self.path} is not open for writing")
        return self._writer

    @property
    def reader(self) -> _Connection:
        if self._reader is None:
            raise StoreError(f"record store {self.path} is not open")
        return self._reader

    # --- writing -------------------------------------------------------------------------

    async def upsert(self, rows: Sequence[dict[str, Any]]) -> None:
        if len(rows) == 1:  # one record: shares a transaction with records written at the same time
            await self._group.write(rows[0])
            return
        await self.writer.run(lambda db: self.upsert_blocking(db, rows))

    def upsert_blocking(self, db: sqlite3.Connection, rows: Sequence[dict[str, Any]]) -> None:
        """In the writer thread: one transaction for `rows` (the spool flushes in bulk)."""
        values = [_row_values(row) for row in rows]
        try:
            if len(values) == 1:
                db.execute(_UPSERT, values[0])
                return
            db.execute("BEGIN IMMEDIATE")
            try:
                db.executemany(_UPSERT, values)
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
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
            if before_ts is not None:
                removed += db.execute(f"DELETE FROM records WHERE {prunable} AND ts < ?", (before_ts,)).rowcount
            if keep_newest is not None:
                cutoff = db.execute("SELECT ts FROM records ORDER BY ts DESC LIMIT 1 OFFSET ?", (keep_newest,)).fetchone()
                if cutoff is not None:
                    removed += db.execute(f"DELETE FROM records WHERE {prunable} AND ts <= ?", (cutoff[0],)).rowcount
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
            sql = "SELECT session FROM records WHERE replay_key = ? AND session != ? ORDER BY ts DESC LIMIT 1"
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
                for rid, body in db.execute(
                    "SELECT id, body FROM records WHERE replay_key = ? AND provenance = 'real' AND session != ? ORDER BY ts DESC LIMIT ?",
                    (call_key, exclude_session, limit),
                ):
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

    # --- the dashboard's aggregates and pages (shadow/sqlite_dashboard.py) ---------------

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
        for attribute in ("_writer", "_reader"):
            connection = getattr(self, attribute)
            if connection is not None:
                setattr(self, attribute, None)
                await asyncio.to_thread(connection.close)


def _migrate(db: sqlite3.Connection) -> None:
    """Bring the file to SCHEMA_VERSION (idempotent; runs in the writer thread)."""
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if version == SCHEMA_VERSION:
        return
    if version > SCHEMA_VERSION:
        raise StoreError(f"the record store was written by a newer simroute (schema {version}, this one reads {SCHEMA_VERSION})")
    db.execute("BEGIN IMMEDIATE")
    try:
        # executescript would commit mid-migration: statements run one by one.
        for statement in _TABLES.split(";"):
            if statement.strip():
                db.execute(statement)
        existing = {row[1] for row in db.execute("PRAGMA table_info(records)")}
        for name, declaration in _V2_COLUMNS:
            if name not in existing:
                db.execute(f"ALTER TABLE records ADD COLUMN {name} {declaration}")
        for statement in _V2_INDEXES.split(";"):
            if statement.strip():
                db.execute(statement)
        for name, declaration in _V3_COLUMNS:
            if name not in existing:
                db.execute(f"ALTER TABLE records ADD COLUMN {name} {declaration}")
                db.execute(f"UPDATE records SET {name} = json_extract(body, '$.{name}') WHERE divergence IS NOT NULL")
        if version < 3:
            for statement in _V3_INDEXES.split(";"):
                if statement.strip():
                    db.execute(statement)
        if version < 4:  # recounting and reindexing every record: only once
            for statement in _statements(_V4_SCHEMA):
                db.execute(statement)
        for name, declaration in _V5_COLUMNS:
            if name not in existing:
                db.execute(f"ALTER TABLE records ADD COLUMN {name} {declaration}")
        for statement in _statements(_V5_INDEXES):
            db.execute(statement)
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _statements(script: str) -> list[str]:
    """A script's statements, trigger bodies kept whole (their `;` are inside BEGIN … END)."""
    statements, current = [], ""
    for piece in script.split(";"):
        current += piece
        if current.strip() and (" BEGIN " not in current or current.rstrip().endswith("END")):
            statements.append(current.strip())
            current = ""
        elif current.strip():
            current += ";"
    return statements


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
