"""The adopted world model in Redis, shared by the replicas: `simroute tune --adopt`
stores the adopted file's bytes (`<prefix>:world_model:file:<digest>`) and the record
(`<prefix>:world_model:current`: the adoption and a version that changes with every
adoption and revert), then announces it on `<prefix>:world_model:adopted`. Every
replica is told at once, writes the bytes to a cache file beside its local files and
loads it; the record is also read every few seconds, for a replica that was not
subscribed when the adoption was made. The history is a list
(`<prefix>:world_model:history`), trimmed to the newest HISTORY_KEPT entries."""

from __future__ import annotations

import asyncio
import base64
import json
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from records.shared_state.adopted_world_model import (
    HISTORY_KEPT,
    Adoption,
    NothingAdopted,
    adopted_entry,
    reverted_entry,
    write_atomically,
)
from records.shared_state.published_models_redis import follow_channel
from records.store.protocol import StoreError
from records.store.redis.base import RedisBase


class RedisAdoptedWorldModel:
    name = "redis"

    def __init__(self, store: RedisBase, cache: Path) -> None:
        self.store = store
        self.cache = cache  # where this replica writes the adopted files it loads

    async def adopt(self, adoption: Adoption, data: bytes) -> Adoption:
        await self.store.open()  # a command adopting from outside a router opens the store here
        adoption = Adoption(**{**adoption.describe(), "previous": await self.current()})
        payload = base64.b64encode(data).decode("ascii")
        file = self._key("file", adoption.digest)

        async def store_file(r):
            await r.set(file, payload)

        await self.store.run("storing the adopted world model", store_file)
        await self._announce(adoption, adopted_entry(adoption))
        return adoption

    async def revert(self) -> Adoption | None:
        await self.store.open()
        current = await self.current()
        if current is None:
            raise NothingAdopted("no adopted world model to revert: replicas use the config's own")
        await self._announce(current.previous, reverted_entry(current))
        return current.previous

    async def version(self) -> str | None:
        record = await self._record()
        return record.get("version") if record else None

    async def current(self) -> Adoption | None:
        record = await self._record()
        return Adoption.from_json(record.get("adoption")) if record else None

    async def history(self) -> list[dict[str, Any]]:
        key = self._key("history")
        entries = await self.store.run("reading the adopted world model's history", lambda r: r.lrange(key, 0, -1))
        return [json.loads(entry) for entry in entries]

    async def file(self, adoption: Adoption) -> Path:
        path = self.cache / adoption.cached_name
        if path.is_file():
            return path
        key = self._key("file", adoption.digest)
        payload = await self.store.run("reading the adopted world model", lambda r: r.get(key))
        if not payload:
            raise StoreError(f"the adopted world model's file ({adoption.digest[:12]}) is not in Redis")
        await asyncio.to_thread(write_atomically, path, base64.b64decode(payload))
        return path

    async def follow(self, check: Callable[[], Awaitable[object]], *, poll_s: float) -> None:
        await follow_channel(self.store, self._key("adopted"), check, poll_s=poll_s, what="adopted world model")

    async def _record(self) -> dict | None:
        key = self._key("current")
        text = await self.store.run("reading the adopted world model", lambda r: r.get(key))
        return json.loads(text) if text else None

    async def _announce(self, adoption: Adoption | None, entry: dict[str, Any]) -> None:
        version = uuid.uuid4().hex
        record = json.dumps({"version": version, "adoption": adoption.to_json() if adoption else None})
        current, channel, history = self._key("current"), self._key("adopted"), self._key("history")

        async def work(r):
            pipe = r.pipeline(transaction=True)  # the record and its history entry together
            pipe.set(current, record)
            pipe.rpush(history, json.dumps(entry))
            pipe.ltrim(history, -HISTORY_KEPT, -1)
            await pipe.execute()
            await r.publish(channel, version)

        await self.store.run("announcing the adopted world model", work)

    def _key(self, *parts: str) -> str:
        return self.store.key("world_model", *parts)
