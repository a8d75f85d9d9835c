"""The embedded record store, `SQLiteStore`: one SQLite file in WAL mode, off the event loop.

One writer thread and one reader thread each own a connection
(`records/store/sqlite/thread.py`): the event loop only awaits their results, so a
database locked by another process stalls no channel; records written at the
same time share a commit. WAL lets several simroute processes share the file; the writer's busy
timeout is short (`store.busy_timeout_ms`) because a record that cannot be
committed in time goes to the spool instead (see `records/store/record_log.py`).

The schema and its migrations: `records/store/sqlite/schema.py`; an older file is
migrated in place when opened.

Its parts, one concept each, are mixins of `base.SQLiteBase` (the file, its
threads, error translation): `writes.py`, `reads.py`, `replay_lookups.py`,
`noise_table.py`, `maintenance.py`, `export_reads.py`, `tool_pins.py`, `judge_scores.py`.
"""

from __future__ import annotations

from records.store.sqlite.base import create_private_file
from records.store.sqlite.export_reads import ExportReads
from records.store.sqlite.judge_scores import JudgeScores
from records.store.sqlite.maintenance import StoreMaintenance
from records.store.sqlite.noise_table import NoiseTable
from records.store.sqlite.reads import RecordReads
from records.store.sqlite.replay_lookups import ReplayLookups
from records.store.sqlite.schema import SCHEMA_VERSION
from records.store.sqlite.tool_pins import ToolPins
from records.store.sqlite.writes import RecordWrites

__all__ = ["SCHEMA_VERSION", "SQLiteStore", "create_private_file"]


class SQLiteStore(
    RecordWrites, RecordReads, ReplayLookups, NoiseTable, StoreMaintenance, ExportReads, ToolPins, JudgeScores
):
    """The record store protocol (`records/store/protocol.py`) on one SQLite file."""
