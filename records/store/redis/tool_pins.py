"""Tool-definition pins in Redis (the rug-pull defence, router/engine/tool_pin_checks.py), shared by
the replicas: `<prefix>:pins` holds each tool's accepted definition (field
`server\\x1ftool`), `<prefix>:pin-changes` the changes later listings showed (field
`server\\x1ftool\\x1fnew digest`). Changes are rare: their updates read the hash and
write it back in one transaction (a new change's under WATCH, so replicas seeing it at
once record it once)."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from redis.exceptions import WatchError

from records.store.redis.base import RedisBase
from records.store.store_rules import ACCEPTED, PENDING, SUPERSEDED, ending, pin_of, superseded_by

_SEP = "\x1f"


class ToolPins(RedisBase):
    async def pins(self, server: str | None = None) -> list[dict[str, Any]]:
        rows = await self._run("reading tool pins", lambda r: r.hgetall(self._key("pins")))
        pins = [json.loads(body) for body in rows.values()]
        return sorted(
            (p for p in pins if server is None or p["server"] == server), key=lambda p: (p["server"], p["tool"])
        )

    async def add_pins(self, pins: Sequence[dict[str, Any]]) -> None:
        async def work(r) -> None:
            pipe = r.pipeline(transaction=True)
            for pin in pins:  # HSETNX: a tool pinned first by another replica keeps that pin
                pipe.hsetnx(
                    self._key("pins"), f"{pin['server']}{_SEP}{pin['tool']}", json.dumps(pin, ensure_ascii=False)
                )
            await pipe.execute()

        await self._run("writing tool pins", work)

    async def _changes(self) -> dict[str, dict[str, Any]]:
        rows = await self._run("reading tool pin changes", lambda r: r.hgetall(self._key("pin-changes")))
        return {field: json.loads(body) for field, body in rows.items()}

    async def pin_changes(self, server: str | None = None, *, status: str | None = None) -> list[dict[str, Any]]:
        changes = (await self._changes()).values()
        chosen = [
            c
            for c in changes
            if (server is None or c["server"] == server) and (status is None or c["status"] == status)
        ]
        return sorted(chosen, key=lambda c: c["ts"])

    async def add_pin_change(self, change: dict[str, Any]) -> bool:
        field = _SEP.join((change["server"], change["tool"], change["new_digest"]))
        key = self._key("pin-changes")

        async def work(r) -> bool:
            async with r.pipeline(transaction=True) as pipe:
                while True:
                    await pipe.watch(key)
                    changes = {f: json.loads(body) for f, body in (await pipe.hgetall(key)).items()}
                    pending = {f: c for f, c in changes.items() if c["status"] == PENDING}
                    superseded = superseded_by(change, pending)
                    if superseded is None:
                        return False
                    updates = {
                        f: json.dumps({**pending[f], "status": SUPERSEDED}, ensure_ascii=False) for f in superseded
                    }
                    updates[field] = json.dumps({**change, "status": PENDING}, ensure_ascii=False)
                    pipe.multi()
                    pipe.hset(key, mapping=updates)
                    try:
                        await pipe.execute()
                    except WatchError:  # another replica wrote the changes since this read: read them again
                        continue
                    return True

        return await self._run("writing a tool pin change", work)

    async def end_pin_changes(self, server: str, tools: Sequence[str] | None, status: str) -> list[dict[str, Any]]:
        """End the pending changes of `server` (of `tools`; None: all) with `status`, read
        and written in one transaction (a change another replica records meanwhile is
        read again, never overwritten); `accepted` pins each one's definition."""
        now, key = time.time(), self._key("pin-changes")

        async def work(r) -> dict[str, dict[str, Any]]:
            async with r.pipeline(transaction=True) as pipe:
                while True:
                    await pipe.watch(key)
                    changes = {f: json.loads(body) for f, body in (await pipe.hgetall(key)).items()}
                    pending = {f: c for f, c in changes.items() if c["status"] == PENDING}
                    ended = {f: {**pending[f], "status": status} for f in ending(pending, server, tools)}
                    if not ended:
                        return {}
                    pipe.multi()
                    pipe.hset(key, mapping={f: json.dumps(c, ensure_ascii=False) for f, c in ended.items()})
                    for change in ended.values() if status == ACCEPTED else ():
                        pin = pin_of(change, now)
                        pipe.hset(
                            self._key("pins"), f"{server}{_SEP}{change['tool']}", json.dumps(pin, ensure_ascii=False)
                        )
                    try:
                        await pipe.execute()
                    except WatchError:  # another replica wrote the changes since this read: read them again
                        continue
                    return ended

        ended = await self._run("ending tool pin changes", work)
        return sorted(ended.values(), key=lambda c: c["ts"])
