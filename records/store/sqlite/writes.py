"""Writing records to the SQLite store: one upsert per record, group-committed by
the writer thread with the records written at the same time, their minute counts
(and per-sub pair counts) and replay sources updated in the same transaction; and whether a write would go
through now (the spool asks before it flushes). A locked file raises `StoreBusy`."""

from __future__ import annotations

import operator
import sqlite3
from collections.abc import Sequence
from typing import Any

from calls import tool_key
from records import record_json
from records.servable import servable_row
from records.store.protocol import StoreBusy, StoreError
from records.store.server_writes import write_span
from records.store.sqlite import minute_counts, replay_sources, sub_counts
from records.store.sqlite.base import SQLiteBase
from records.store.sqlite.schema import COLUMNS

# An upsert rather than INSERT OR REPLACE: a record written twice (started, then
# complete; pending, then its shadow result) is updated in place instead of deleted
# and inserted again, which spares a delete in every index.
_UPSERT = (
    f"INSERT INTO records ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))}) "
    f"ON CONFLICT(id) DO UPDATE SET {', '.join(f'{c} = excluded.{c}' for c in COLUMNS if c != 'id')}"
)


def _row_values(row: dict[str, Any]) -> tuple[Any, ...]:
    return (
        row["id"],
        row["ts"],
        row["session"],
        row["step"],
        row["channel"],
        row["server"],
        row["tool"],
        row["call_key"],
        tool_key(row["channel"], row["server"], row["tool"]),
        row["route"],
        row["provenance"],
        row["status"],
        row.get("divergence"),
        record_json.dumps(row),
        row.get("replay_key") or row["call_key"],
        row.get("key_scheme") or "",
        int(row.get("occurrence") or 0),
        row.get("recording"),
        row.get("owner") or "",
        row.get("divergence_kind"),
        _writes_until(row),
    )


# What the minute counts read of a row's values.
_counted = operator.itemgetter(
    *(
        COLUMNS.index(c)
        for c in (
            "id",
            "ts",
            "channel",
            "server",
            "tool",
            "route",
            "provenance",
            "status",
            "divergence",
            "divergence_kind",
        )
    )
)


# What the replay sources read of a row's values: (replay key, session, ts).
_replay_source = operator.itemgetter(*(COLUMNS.index(c) for c in ("replay_key", "session", "ts")))


def _writes_until(row: dict[str, Any]) -> float | None:
    span = write_span(row)
    return span[1] if span is not None else None


class RecordWrites(SQLiteBase):
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
                db.executemany(sub_counts.ADD, sub_counts.inserted_counts(rows, inserted))
                replay_sources.note(
                    db, (_replay_source(value) for value, row in zip(values, rows, strict=True) if servable_row(row))
                )
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
