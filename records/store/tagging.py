"""Naming a recording after the fact: a session's servable records (records/servable.py:
its real answers, or replays of them) tagged with a recording's name, so a later
episode's `recording: NAME` (or `replay.from`) replays exactly them. The records are
written again with the tag (an upsert by id: counts and aggregates do not change), in
either store, without a restart."""

from __future__ import annotations

from dataclasses import dataclass

from records.servable import servable_row
from records.store.protocol import RecordStore

_BATCH = 500


@dataclass(frozen=True, slots=True)
class Tagged:
    records: int  # the session's records
    tagged: int  # those tagged (the servable ones)


async def tag_recording(store: RecordStore, session: str, name: str) -> Tagged:
    total, batch, tagged = 0, [], 0
    async for row in store.session_rows(session):
        total += 1
        if servable_row(row):
            batch.append({**row, "recording": name})
        if len(batch) >= _BATCH:
            await store.upsert(batch)
            tagged, batch = tagged + len(batch), []
    if batch:
        await store.upsert(batch)
        tagged += len(batch)
    return Tagged(total, tagged)
