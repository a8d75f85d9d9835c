"""Writing records to Redis: one Lua script per record (the record and all its index
entries, atomically), records written at the same time sharing one pipeline
(group commit); and whether a write would go through now."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from calls import tool_key
from records import record_json
from records.servable import servable_row
from records.store.protocol import StoreError
from records.store.redis.base import RedisBase
from records.store.redis.dashboard import SEP, sub_field
from records.store.server_writes import write_span

# Real records kept per tool and per call key for the world model's examples.
EXAMPLES_PER_KEY = 200


class RecordWrites(RedisBase):
    async def upsert(self, rows: Sequence[dict[str, Any]]) -> None:
        if len(rows) == 1:  # one record: shares a pipeline with records written at the same time
            await self._group.write(rows[0])
            return
        await self._upsert_many(rows)

    async def _upsert_many(self, rows: Sequence[dict[str, Any]]) -> None:
        async def work(r):
            if len(rows) == 1:
                await self._upsert(args=self._args(rows[0]))
                return
            pipe = r.pipeline(transaction=False)
            for row in rows:
                await self._upsert(args=self._args(row), client=pipe)
            await pipe.execute()

        await self._run("writing records", work)

    def _args(self, row: dict[str, Any]) -> list[Any]:
        return [
            self.prefix,
            row["id"],
            record_json.dumps(row),
            row["ts"],
            row["session"],
            row["step"],
            row.get("replay_key") or row["call_key"],
            int(row.get("occurrence") or 0),
            row.get("recording") or "",
            row["provenance"],
            row["status"],
            row["call_key"],
            tool_key(row["channel"], row["server"], row["tool"]),
            row["channel"],
            row["route"],
            self.max_log,
            EXAMPLES_PER_KEY,
            SEP.join((row["channel"], row["server"], row["tool"])),
            "" if row.get("divergence") is None else repr(float(row["divergence"])),
            row.get("divergence_kind") or "none",
            SEP.join((row["channel"], row["server"])),
            _score(write_span(row)),
            sub_field(row),
            "1" if servable_row(row) else "",  # only an answer that may stand for the real side's makes a replay source
        ]

    async def writable(self) -> bool:
        try:
            return bool(await self._run("ping", lambda r: r.ping()))
        except StoreError:
            return False


def _score(span: tuple[float, float] | None) -> str:
    """The write index's score of a record: the end of its span ("" : not a write)."""
    if span is None:
        return ""
    return "+inf" if span[1] == math.inf else repr(span[1])
