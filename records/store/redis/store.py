"""The record store at scale, `RedisStore`: Redis, shared by many router replicas.

Each record is one JSON value (`<prefix>:rec:<id>`) plus index entries, all
written by one Lua script per record (one round trip, atomic): an event stream
with a retention cap (`<prefix>:log`, XADD MAXLEN ~), a session's records by
step, replay sources by key (the sessions with a servable answer, records/servable.py,
most recent first; and every session that made the call, to say why a miss has no
source), occurrences per (key, session), named recordings, capped per-tool and per-call-key example
sets, the pending and started sets, per server the calls that may have written
to it (by the end of their span: records/store/server_writes.py), and aggregates
counted at write time for the dashboard. Every command has a deadline (socket
timeouts) and no retries: when Redis is unreachable, `StoreError` sends records
to the spool, which flushes them in order when it returns.

Its parts, one concept each, are mixins of `base.RedisBase` (client, scripts, key
names, error translation): `writes.py`, `reads.py`, `maintenance.py`,
`noise_table.py`, `export_reads.py`, `tool_pins.py`, `judge_scores.py`.
"""

from __future__ import annotations

from records.store.redis.export_reads import ExportReads
from records.store.redis.judge_scores import JudgeScores
from records.store.redis.maintenance import StoreMaintenance
from records.store.redis.noise_table import NoiseTable
from records.store.redis.reads import RecordReads
from records.store.redis.tool_pins import ToolPins
from records.store.redis.writes import RecordWrites

__all__ = ["RedisStore"]


class RedisStore(StoreMaintenance, RecordWrites, RecordReads, NoiseTable, ExportReads, ToolPins, JudgeScores):
    """The record store protocol (`records/store/protocol.py`) on Redis, shared by replicas."""
