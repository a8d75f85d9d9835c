"""The first addon of every engine: writes each call's records, durable (or spooled)
before the call goes real and before the agent sees the answer. Raises `RecordError`
when it cannot (the engine then keeps the call from going real, or withholds the
answer: see router/engine/addons.py)."""

from __future__ import annotations

from records.record import Record
from records.store.record_log import RecordLog
from router.engine.addons import CallAddon
from router.engine.pending import Pending


class RecordWriter(CallAddon):
    def __init__(self, records: RecordLog) -> None:
        self.records = records

    async def sending(self, pending: Pending, record: Record) -> None:
        await self.records.write(record)

    async def finished(self, pending: Pending, record: Record) -> None:
        await self.records.write(record)
