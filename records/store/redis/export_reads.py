"""Reading the whole store a page at a time, for an export: the sessions (a SCAN
over the per-session indexes, cursor by cursor), then one session's records in
step order (its sorted set, by rank). Memory stays flat however large the store
grows. SCAN may name a session twice while Redis resizes its table: the reader
collapses repeats (records/export/run.py)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

from records.store.redis.base import RedisBase

_GLOB = re.compile(r"([\\*?\[\]])")


class ExportReads(RedisBase):
    async def session_ids(self, *, prefix: str = "", page: int = 500) -> AsyncIterator[str]:
        head = self._key("session", "")
        pattern = _GLOB.sub(r"\\\1", head + prefix) + "*"
        cursor: int | str = 0
        while True:
            cursor, keys = await self._command("listing sessions", "scan", cursor, pattern, page)
            for key in keys:
                yield key[len(head) :]
            if int(cursor) == 0:
                return

    async def session_rows(self, session: str, *, page: int = 500) -> AsyncIterator[dict[str, Any]]:
        key = self._key("session", session)
        start = 0
        while True:
            # Members of equal score (step) come in id order: (step, id), like SQLite's.
            ids = await self._command("reading a session", "zrange", key, start, start + page - 1)
            for row in await self._bodies(ids):
                yield row
            if len(ids) < page:
                return
            start += page
